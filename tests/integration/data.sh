#!/usr/bin/env bash
# data.sh BIN_DIR SRC_DIR [MODE]: datasets where the GPUs are (issue 19), on a `gsched up`
# cluster of four workers, each with its own shard cache (state/data/NODE):
#   - node3 and node4 start with complementary halves of a dataset's train shards in their
#     caches (the even ones and the odd ones), and no val shard; the workers report them (`gsched data ls`);
#   - a 2-node job with [data] manifest lands on node3 and node4 (the placement prefers
#     nodes holding its data; all four are idle and alike), reads its node's cached dataset (GSCHED_DATA_DIR, holding only that node's
#     shards) with the shared plan file (GSCHED_DATA_PLAN); only the shards nobody held (the
#     val shards, for every node) come from the source, and any train shard moved for
#     balance comes from the peer that holds it; `gsched show` says so;
#   - the same job again moves nothing;
#   - with MODE mpi those two runs are a 2-node gsched-train job (launcher = "mpi": mpirun
#     on node3 starts one rank per node as srun steps, node4 stages its shards for its step
#     without a task of its own): it trains, each rank reading its plan's shards from its
#     node's cache; then the shell job checks what each rank was given;
#   - stage = "stream": a gsched-train job on a dataset no node holds starts once its val
#     shards are in; its loader asks the worker for each train shard ahead of use
#     (DataFetchRequest on the CLI socket, answered by the worker) and trains;
#   - a dataset only one node holds in full: a 2-node job runs there and on another node,
#     which fetches its shards from the first (worker to worker), none from the source;
#   - a dataset only a drained node's cache holds: a job on two other nodes fetches every
#     shard from that node's worker, none from the source;
#   - `gsched data warm DIR -w node1 --wait` puts the whole dataset on node1, `stat` shows
#     it, `evict` (root) removes it; a job file naming no dataset is refused, nothing queued;
#   - (as root) a cached copy lets read only who may read its source: everyone, or the
#     source's group; the same dataset from a second group's source lets that group in too,
#     the first keeping its access;
#   - with scheduler.data_locality_wait, a job whose data's node is busy waits for it
#     (DataNodesBusy) while other nodes are free, expected to start when the busy job's
#     limit ends, and runs there once it frees; one whose own data.locality_wait is "0s"
#     runs elsewhere at once; with scheduler.data_copy_rate, one whose data copies in a
#     second waits about that long, not the set wait, and runs elsewhere.
name="integration_data"
. "$(dirname "$0")/lib.sh"
mode=${3:-local}

# dataset DIR TOKENS: a dataset of TOKENS-token u8 shards (5 % val) of the licence texts.
dataset() {
  "$bin/gsched" shard build --out "$1" --shard-tokens "$2" --val-fraction 0.05 \
    --raw u8 --vocab 256 /usr/share/common-licenses/* > "$tmp/build.log" 2>&1 ||
    fail "shard build $1: $(cat "$tmp/build.log")"
}
# warm DIR NODE: the whole dataset staged onto NODE's cache.
warm() {
  local out
  out=$("$bin/gsched" data warm "$1" -w "$2" --wait --timeout 60 2>&1) || fail "warm $2: $out"
}
# data_job NAME DIR [EXTRA]: a 2-node job that reads dataset DIR (and does nothing), run to
# its end; its id printed.
data_job() {
  local job
  job_file "$1.toml" "[resources]
nodes = 2
[run]
command = [\"true\"]
[data]
manifest = \"$2\"
${3:-}"
  job=$(submit "$1.toml")
  wait_end "$job" 60 || fail "job $1 ($job) failed: $(jq "$job" 'j["reason"]')"
  echo "$job"
}

# The dataset: shards of 1,000 tokens (u8: bytes + 64), a val split.
dataset "$tmp/data" 1000
id=$(sha256sum "$tmp/data/manifest.toml" | cut -c1-32)
# Manifest facts: "file split bytes" per shard, in manifest order.
python3 - "$tmp/data/manifest.toml" > "$tmp/shards" <<'PY' || fail "reading the manifest"
import sys, tomllib
m = tomllib.load(open(sys.argv[1], "rb"))
for s in m["shard"]:
    print(s["file"], s["split"], 64 + s["tokens"] * {"u8": 1, "u16": 2, "u32": 4}[s["dtype"]])
PY
train_bytes=$(awk '$2 == "train" {b += $3} END {print b}' "$tmp/shards")
val_bytes=$(awk '$2 == "val" {b += $3} END {print b}' "$tmp/shards")
ntrain=$(awk '$2 == "train"' "$tmp/shards" | wc -l)
[ "$ntrain" -ge 8 ] && [ "$val_bytes" -gt 0 ] || fail "dataset too small: $(cat "$tmp/shards")"

# node3 holds the even train shards, node4 the odd ones; nobody the val shards.
for n in 3 4; do
  mkdir -p "$state/data/node$n/$id"
  cp "$tmp/data/manifest.toml" "$state/data/node$n/$id/"
done
awk '$2 == "train" {print NR % 2 == 1 ? 3 : 4, $1}' "$tmp/shards" | while read -r n f; do
  cp "$tmp/data/$f" "$state/data/node$n/$id/$f"
done

start_cluster --workers 4 --gpus-per-node 0 --heartbeat 1s

# --- holdings reported ------------------------------------------------------------------------
held() { # held NODE: shards of the dataset NODE's cache holds, by gsched data ls
  "$bin/gsched" data ls --json | python3 -c '
import json, sys
rows = [r for r in json.load(sys.stdin)["holdings"] if r["node"] == sys.argv[1] and r["dataset"] == sys.argv[2]]
print(rows[0]["held"] if rows else -1)' "$1" "$id"
}
part4=$(awk '$2 == "train" && NR % 2 == 0' "$tmp/shards" | wc -l)
part3=$((ntrain - part4))
wait_for "node3 and node4 to report their shards" 20 \
  eval '[ "$(held node3)" = "$part3" ] && [ "$(held node4)" = "$part4" ]'

# --- a refused job: the dataset does not exist ------------------------------------------------
job_file bad.toml "[resources]
nodes = 2
[run]
command = [\"true\"]
[data]
manifest = \"$tmp/no-such-data\""
out=$("$bin/gsched" submit bad.toml 2>&1) && fail "a job on a missing dataset submitted: $out"
case $out in *"bad.toml: data.manifest: "*"no-such-data"*) ;; *) fail "missing dataset: $out" ;; esac
[ "$(queue_count)" = 0 ] || fail "a refused job was queued"

# --- the job: each rank lists its node's cached dataset and keeps the plan --------------------
job_file read.toml "name = \"read\"
[resources]
nodes = 2
[run]
command = [\"sh\", \"-c\", \"ls \$GSCHED_DATA_DIR > ls.\$1.\$RANK && cp \$GSCHED_DATA_PLAN plan.\$1.\$RANK\", \"sh\", \"%RUN%\"]
[data]
manifest = \"$tmp/data\"
tolerance = 0.1"
run_job() { # run_job TAG: the job once, its id printed
  sed "s/%RUN%/$1/" "$work/read.toml" > "$work/read-$1.toml"
  local job
  job=$(submit "read-$1.toml")
  wait_end "$job" 60 || fail "job $job ($1) failed: $(jq "$job" 'j["reason"]')"
  echo "$job"
}
if [ "$mode" = mpi ]; then
  # MPI's libraries leak by design; the ranks and launchers under the sanitizer build say so.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  export PATH="$bin:$PATH" # the job's environment is submit's: gsched-train is found there
  train_cfg "$work/cfg.toml" "$tmp/data" 30
  job_file train.toml "name = \"train\"
[resources]
nodes = 2
cpus_per_task = 1
[run]
launcher = \"mpi\"
command = [\"gsched-train\", \"train\", \"cfg.toml\", \"--out_dir=%RUN%\"]
stdout = \"%RUN%.out\"
[data]
manifest = \"$tmp/data\"
tolerance = 0.1"
  train_job() { # train_job TAG: the training job once, its id printed
    sed "s/%RUN%/$1/g" "$work/train.toml" > "$work/train-$1.toml"
    local job
    job=$(submit "train-$1.toml")
    wait_end "$job" 240 || fail "training $job ($1) failed: $(tail -20 "$work/$1.out")"
    grep -q "data parallel: 2 ranks (mpi)" "$work/$1.out" || fail "not 2 MPI ranks: $(head "$work/$1.out")"
    grep -q "GSCHED_DATA_DIR" "$work/$1.out" || fail "the ranks did not read the cache: $(head -20 "$work/$1.out")"
    echo "$job"
  }
  first=$(train_job first)
else
  first=$(run_job first)
fi
expect "$first" 'sorted(a["node_name"] for a in j["allocation"]) == ["node3", "node4"]' \
  "on node3 and node4, where its data is"
expect "$first" "j['spec']['data']['dataset'] == '$id'" "the dataset's id in the job"
u() { jq "$1" "j['usage']['data_bytes_$2']"; }
local1=$(u "$first" local) peer1=$(u "$first" peer) source1=$(u "$first" source)
[ "$source1" = $((2 * val_bytes)) ] ||
  fail "first run: $source1 bytes from the source, expected the val shards on each node ($((2 * val_bytes)))"
[ $((local1 + peer1)) = "$train_bytes" ] ||
  fail "first run: local $local1 + peer $peer1 is not the train bytes $train_bytes"
[ $((peer1 * 10)) -le "$train_bytes" ] || fail "first run: $peer1 bytes from peers, over 10 %"
"$bin/gsched" show "$first" | grep -q "Data: Local=" || fail "gsched show has no Data line"
# Each rank saw its own node's cache, the same plan, and no shard it was not given.
if [ "$mode" != mpi ]; then
  cmp -s "$work/plan.first.0" "$work/plan.first.1" || fail "the ranks' plan files differ"
  grep -q "dataset = \"$id\"" "$work/plan.first.0" || fail "plan: $(cat "$work/plan.first.0")"
  for r in 0 1; do
    n=$(grep -c '\.bin$' "$work/ls.first.$r")
    [ "$n" -lt "$ntrain" ] || fail "rank $r's node holds every train shard: $n"
  done
fi

# --- the same job again moves nothing ----------------------------------------------------------
if [ "$mode" = mpi ]; then
  second=$(train_job second)
  third=$(run_job third) # what each rank is given, as the shell sees it
  cmp -s "$work/plan.third.0" "$work/plan.third.1" || fail "the ranks' plan files differ"
else
  second=$(run_job second)
fi
[ "$(u "$second" source)" = 0 ] && [ "$(u "$second" peer)" = 0 ] ||
  fail "second run moved data: source $(u "$second" source) peer $(u "$second" peer)"
[ "$(u "$second" local)" = $((train_bytes + 2 * val_bytes)) ] ||
  fail "second run: local $(u "$second" local), expected $((train_bytes + 2 * val_bytes))"

# --- a job naming its dataset by id: found where the caches say it came from ----------------
by_id=$(data_job by-id "$id")
expect "$by_id" "j['spec']['data']['source'] == '$tmp/data'" "the dataset's directory found"
job_file no-id.toml "[resources]
nodes = 1
[run]
command = [\"true\"]
[data]
manifest = \"0123456789abcdef0123456789abcdef\""
out=$("$bin/gsched" submit no-id.toml 2>&1) && fail "a job on an unknown dataset id submitted: $out"
case $out in *"no node's cache knows where it came from"*) ;; *) fail "unknown id: $out" ;; esac

# --- warm, stat, evict -------------------------------------------------------------------------
warm "$tmp/data" node1
[ "$(held node1)" = "$(wc -l < "$tmp/shards")" ] || fail "node1 after warm: $(held node1)"
out=$("$bin/gsched" data stat "$id" 2>&1) || fail "stat: $out"
echo "$out" | grep -q "^node1 .*$id" || fail "stat shows no node1: $out"
out=$("$bin/gsched" data warm "$tmp/data" 2>&1) && fail "warm without nodes: $out"
case $out in *"which nodes?"*) ;; *) fail "warm without nodes: $out" ;; esac
out=$("$bin/gsched" data ls -w node9 2>&1) && fail "ls of node9: $out"
case $out in *"no node named node9"*) ;; *) fail "ls of node9: $out" ;; esac
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  # Caches are every user's: only root evicts.
  chmod 711 "$tmp" "$state" # the socket is 0666: let others through the directories
  out=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    "$bin/gsched" data evict "$id" -w node1 2>&1) && fail "nobody evicted: $out"
  case $out in *"only root may evict"*) ;; *) fail "evict by nobody: $out" ;; esac
fi
if [ "$(id -u)" = 0 ]; then
  out=$("$bin/gsched" data evict "$id" -w node1 2>&1) || fail "evict: $out"
  wait_for "node1 to drop the dataset" 20 eval '[ "$(held node1)" = -1 ]'
  [ ! -e "$state/data/node1/$id" ] || fail "node1's copy is still on disk"
fi

# --- a node's cache lets read only who may read the source -----------------------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  as() { # as GID CMD...: run CMD as nobody with GID as its only group
    setpriv --reuid=nobody --regid="$1" --clear-groups "${@:2}"
  }
  chmod 711 "$tmp" # searchable by everyone (and above it /tmp): the sources' modes decide
  dataset "$tmp/public" 900
  dataset "$tmp/private" 950
  chgrp -R 4321 "$tmp/private" && chmod 750 "$tmp/private" && chmod 640 "$tmp/private"/* ||
    fail "making the group's dataset"
  warm "$tmp/public" node1
  warm "$tmp/private" node1
  public_cache=$state/data/node1/$(sha256sum "$tmp/public/manifest.toml" | cut -c1-32)
  private_cache=$state/data/node1/$(sha256sum "$tmp/private/manifest.toml" | cut -c1-32)
  got="$(stat -c '%a %u %g' "$public_cache") / $(stat -c '%a %u %g' "$private_cache")"
  [ "$got" = "755 0 0 / 750 0 4321" ] || fail "cached datasets' access: $got"
  as "$(id -g nobody)" cat "$public_cache/manifest.toml" > /dev/null ||
    fail "nobody may not read a dataset everyone may read, from node1's cache"
  as "$(id -g nobody)" cat "$private_cache/manifest.toml" > /dev/null 2>&1 &&
    fail "nobody read the group's dataset through node1's cache"
  as 4321 cat "$private_cache/manifest.toml" > /dev/null ||
    fail "a member of the group may not read its dataset from node1's cache"
  # The same dataset from another group's source: both groups read the copy, nobody else.
  cp -a "$tmp/private" "$tmp/private2" && chgrp -R 4322 "$tmp/private2" ||
    fail "making the other group's copy"
  warm "$tmp/private2" node1
  # The copy is whole already, so the warm's --wait returns before node1's worker has
  # taken the request that lets the second group in: wait for that with a deadline.
  wait_for "the second source's group to read the copy in node1's cache" 10 \
    as 4322 cat "$private_cache/manifest.toml"
  as 4321 cat "$private_cache/manifest.toml" > /dev/null ||
    fail "the second source locked the first one's group out of node1's copy"
  as "$(id -g nobody)" cat "$private_cache/manifest.toml" > /dev/null 2>&1 &&
    fail "nobody read the groups' dataset after its second source"
  # A source its bits keep to root and its ACL opens to nobody: nobody's warm is allowed,
  # and nobody alone is let into the copy, by a named entry (the owner stays root).
  dataset "$tmp/acl" 975
  chmod 700 "$tmp/acl" && chmod 600 "$tmp/acl"/* &&
    setfacl -m u:nobody:rx "$tmp/acl" && setfacl -m u:nobody:r "$tmp/acl"/* ||
    fail "making the ACL's dataset"
  acl_cache=$state/data/node1/$(sha256sum "$tmp/acl/manifest.toml" | cut -c1-32)
  out=$(as "$(id -g nobody)" "$bin/gsched" data warm "$tmp/acl" -w node1 --wait --timeout 60 2>&1) ||
    fail "nobody's warm of a source its ACL lets nobody read: $out"
  as "$(id -g nobody)" cat "$acl_cache/manifest.toml" > /dev/null ||
    fail "nobody may not read, from node1's cache, a dataset the source's ACL lets it read"
  setpriv --reuid=4323 --regid=4323 --clear-groups cat "$acl_cache/manifest.toml" \
    > /dev/null 2>&1 && fail "uid 4323 read the ACL's dataset through node1's cache"
  got=$(getfacl -cn "$acl_cache" 2> /dev/null | grep . | LC_ALL=C sort | tr '\n' ' ')
  [ "$(stat -c %u "$acl_cache")" = 0 ] &&
    [ "$got" = "group::--- mask::r-x other::--- user:$(id -u nobody):r-x user::rwx " ] ||
    fail "the copy's access: owner $(stat -c %u "$acl_cache"), $got"
fi

# --- a peer whose copies are damaged: the shards come from the source instead -----------------
dataset "$tmp/data2" 700
id2=$(sha256sum "$tmp/data2/manifest.toml" | cut -c1-32)
warm "$tmp/data2" node2
# Token bytes overwritten, headers left alone: node2 still counts them as held.
for f in "$state/data/node2/$id2"/*.bin; do
  printf 'XXXX' | dd of="$f" bs=1 seek=100 conv=notrunc 2> /dev/null || fail "damaging $f"
done
damaged=$(data_job damaged "$tmp/data2" "tolerance = 0.1")
expect "$damaged" '"node2" in [a["node_name"] for a in j["allocation"]]' "on node2, which holds the data"
[ "$(u "$damaged" peer)" = 0 ] && [ "$(u "$damaged" source)" -gt 0 ] ||
  fail "damaged peer: peer $(u "$damaged" peer) source $(u "$damaged" source)"
grep -q "peer copy failed, copying from the source" "$state"/node*.log ||
  fail "no worker says its peer's copy failed"

# --- a peer inside the job: node2 holds the dataset, its partner fetches from it -----------
dataset "$tmp/data5" 1500
warm "$tmp/data5" node2
inside=$(data_job inside "$tmp/data5")
expect "$inside" '"node2" in [a["node_name"] for a in j["allocation"]]' "on node2, which holds the data"
[ "$(u "$inside" source)" = 0 ] && [ "$(u "$inside" peer)" -gt 0 ] ||
  fail "inside peer: peer $(u "$inside" peer) source $(u "$inside" source)"

# --- a peer outside the job: node1 (drained) holds the dataset, the job runs elsewhere -------
dataset "$tmp/data4" 1300
warm "$tmp/data4" node1
out=$("$bin/gsched" scontrol update NodeName=node1 State=DRAIN Reason=data-test 2>&1) ||
  fail "drain node1: $out"
outside=$(data_job outside "$tmp/data4")
expect "$outside" '"node1" not in [a["node_name"] for a in j["allocation"]]' "off the drained node1"
[ "$(u "$outside" source)" = 0 ] && [ "$(u "$outside" peer)" -gt 0 ] ||
  fail "outside peer: peer $(u "$outside" peer) source $(u "$outside" source)"
out=$("$bin/gsched" scontrol update NodeName=node1 State=RESUME 2>&1) || fail "resume node1: $out"

# --- waiting for the data's nodes (scheduler.data_locality_wait) ------------------------------
# node2 caches dataset 6 and is held whole by a job on it; a second job on the same data
# waits for node2 (DataNodesBusy) while three nodes are free, holding the reservation of
# node2 from the first's end (its time limit, within the wait), and starts there, moving
# nothing, once the first ends.
sed -i 's/^\[scheduler\]$/[scheduler]\ndata_locality_wait = "120s"/' "$state/gsched.toml"
grep -q '^data_locality_wait = "120s"$' "$state/gsched.toml" || fail "no [scheduler] table to edit"
restart_sched 4
dataset "$tmp/data6" 600
warm "$tmp/data6" node2
job_file hold6.toml "[resources]
exclusive = true
time_limit = \"100s\"
[run]
command = [\"sleep\", \"300\"]
[data]
manifest = \"$tmp/data6\""
job_file near6.toml "[run]
command = [\"true\"]
[data]
manifest = \"$tmp/data6\""
hold6=$(submit hold6.toml)
wait_for "the first job on node2" 30 is "$hold6" 'j["state"] == "RUNNING"'
expect "$hold6" '[a["node_name"] for a in j["allocation"]] == ["node2"]' "on node2, where its data is"
near6=$(submit near6.toml)
wait_for "the second job to wait for node2" 30 is "$near6" 'j["reason"] == "DataNodesBusy"'
expect "$near6" 'j["state"] == "PENDING"' "pending while node1, node3 and node4 are free"
end6=$(jq "$hold6" 'j["start_time_ms"] // 1000 + 100')
expect "$near6" "abs(j['expected_start_ms'] // 1000 - $end6) <= 1" \
  "expected to start on node2 when the first job's limit ends ($end6 s)"
"$bin/gsched" cancel "$hold6" > /dev/null || fail "cancel $hold6"
wait_end "$near6" 60 || fail "job $near6 failed: $(jq "$near6" 'j["reason"]')"
expect "$near6" '[a["node_name"] for a in j["allocation"]] == ["node2"]' "on node2 once it freed"
[ "$(u "$near6" source)" = 0 ] && [ "$(u "$near6" peer)" = 0 ] ||
  fail "the job that waited moved data: source $(u "$near6" source) peer $(u "$near6" peer)"
# A job's own data.locality_wait replaces the scheduler's: with node2 held again, "0s" runs
# at once elsewhere.
hold6=$(submit hold6.toml)
wait_for "the first job on node2 again" 30 is "$hold6" 'j["state"] == "RUNNING"'
expect "$hold6" '[a["node_name"] for a in j["allocation"]] == ["node2"]' "on node2 again"
job_file now6.toml "[run]
command = [\"true\"]
[data]
manifest = \"$tmp/data6\"
locality_wait = \"0s\""
now6=$(submit now6.toml)
wait_end "$now6" 60 || fail "job $now6 failed: $(jq "$now6" 'j["reason"]')"
expect "$now6" '[a["node_name"] for a in j["allocation"]] != ["node2"]' "off the busy node2"
expect "$now6" 'j["spec"]["data"]["locality_wait_s"] == 0' "its own wait in the job's JSON"
expect "$near6" 'j["spec"]["data"]["locality_wait_s"] is None' "the scheduler's wait: null"
"$bin/gsched" cancel "$hold6" > /dev/null || fail "cancel $hold6"
wait_end "$hold6" 30 || true
# scheduler.data_copy_rate weighs the wait: at 1 MiB/s a dataset of a few hundred KB copies
# in a second, so a job waits about that long for the busy node2 (the only node caching
# dataset 7), not the 120 s, and runs elsewhere, copying its data.
sed -i 's/^\[scheduler\]$/[scheduler]\ndata_copy_rate = "1M"/' "$state/gsched.toml"
restart_sched 4
dataset "$tmp/data7" 700
warm "$tmp/data7" node2
sed "s|$tmp/data6|$tmp/data7|" "$work/hold6.toml" > "$work/hold7.toml"
sed "s|$tmp/data6|$tmp/data7|" "$work/near6.toml" > "$work/weigh7.toml"
hold7=$(submit hold7.toml)
wait_for "the first job on node2 once more" 30 is "$hold7" 'j["state"] == "RUNNING"'
expect "$hold7" '[a["node_name"] for a in j["allocation"]] == ["node2"]' "on node2, dataset 7's"
weigh7=$(submit weigh7.toml)
wait_end "$weigh7" 60 || fail "job $weigh7 failed: $(jq "$weigh7" 'j["reason"]')"
expect "$weigh7" '[a["node_name"] for a in j["allocation"]] != ["node2"]' "off the busy node2"
expect "$weigh7" 'j["start_time_ms"] - j["submit_time_ms"] < 30000' \
  "a start after about the copy's second, not the 120 s wait"
[ $(($(u "$weigh7" source) + $(u "$weigh7" peer))) -gt 0 ] ||
  fail "the job that did not wait moved no data"
"$bin/gsched" cancel "$hold7" > /dev/null || fail "cancel $hold7"

# --- stage = "stream": tasks start with the val shards, train shards come as asked for --------
dataset "$tmp/data3" 1100
train_cfg "$work/stream.toml" "$tmp/data3" 12
job_file stream-job.toml "name = \"stream\"
[resources]
nodes = 1
cpus_per_task = 1
[run]
command = [\"$bin/gsched-train\", \"train\", \"stream.toml\", \"--out_dir=streamed\"]
stdout = \"streamed.out\"
[data]
manifest = \"$tmp/data3\"
stage = \"stream\""
streamed=$(submit stream-job.toml)
wait_end "$streamed" 120 || fail "the streaming job failed: $(tail -20 "$work/streamed.out")"
grep -q "streams [0-9]* of its [0-9]* shards" "$work/streamed.out" ||
  fail "the loader did not stream: $(head -20 "$work/streamed.out")"
grep -q "done: 12 steps" "$work/streamed.out" || fail "no training: $(tail "$work/streamed.out")"
grep -q "tasks start, train data streams in" "$state"/node*.log || fail "no worker streamed"
wait_for "the streamed job's figures" 20 is "$streamed" 'j["usage"]["data_bytes_source"] > 0'
check_logs
echo "$name: ok"
