#!/usr/bin/env bash
# kv.sh BIN_DIR SRC_DIR TESTS_DIR: the job's key/value store (gsched kv, and trainer/kv.h
# through TESTS_DIR/kv_client; JobKvPut/JobKvGet) with a real gschedd and two gsched-workerd
# on loopback in a temporary directory. gschedd logs at debug, so that the test sees when a
# get waits ("kv get waits") instead of guessing with sleeps.
#   - A 2-node job rendezvous: task 0 waits until task 1's get is parked in gschedd, then
#     puts; task 1, waiting through its worker's socket, prints the value. A binary value
#     (--file) comes back byte for byte in --json's value_hex; a 128-byte one put and got
#     with trn_kv_put/trn_kv_get too. Outside a job, kv_client gets -ENOENT.
#   - From outside a running job (--job, its owner): a get that is not set (at once, and
#     after --timeout), bad keys, a value over 4096 bytes, the 65th key, --json.
#   - A waiting get whose CLI is killed, on gschedd's socket and through a worker: withdrawn,
#     gschedd runs on (the sanitizer build checks it frees nothing twice).
#   - As root with setpriv: another uid is refused, directly (by the store's owner check) and
#     through a worker (by the relay: that uid has no job on the node).
#   - A waiting get is answered with an error when its job is cancelled, and when it is
#     requeued; the requeued attempt starts with an empty store.
# Finally the daemons stop by SIGTERM and their logs must hold no sanitizer report.
name="kv"
. "$(dirname "$0")/../daemons.sh" "$(cd "$1" && pwd)" "$(cd "$2" && pwd)"
client=$(cd "$3" && pwd)/kv_client
[ -x "$client" ] || fail "no $client (build the kv_client target)"
work=$tmp/work
gates=$tmp/gates
mkdir -p "$work" "$gates" "$tmp/state" || exit 1
cd "$work" || exit 1

write_config 'heartbeat_interval = "1s"' 'kill_grace = "1s"' 'log_level = "debug"' \
  '[worker]' "log_dir = \"$tmp/state\""

"$bin/gschedd" --config "$tmp/gsched.toml" 2>>"$tmp/gschedd.log" &
sched=$!
pids+=("$sched")
wait_for "gschedd to listen" test -S "$tmp/gschedd.sock"
workers=()
for n in node1 node2; do
  "$bin/gsched-workerd" --config "$tmp/gsched.toml" --scheduler 127.0.0.1:"$port" --name "$n" \
    --address 127.0.0.1 --gpus 0 --cli-socket "$tmp/$n.sock" --log-level info 2>"$tmp/$n.log" &
  workers+=($!)
  pids+=($!)
done
nodes_up() { [ "$("$bin/gsched" nodes | grep -cE '^node[12] +up ')" = 2 ]; }
wait_for "both workers up" nodes_up

# submit FILE.toml: prints the job id.
submit() {
  local out
  out=$("$bin/gsched" submit "$1" --json 2>&1) || fail "submit $1 refused: $out"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["job_id"])' "$out" ||
    fail "submit $1: unexpected output: $out"
}
# show JOB EXPR: a Python expression over `gsched show JOB --json`'s job (j).
show() {
  "$bin/gsched" show "$1" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)["job"]
print(eval(sys.argv[1]))' "$2"
}
is() { [ "$(show "$1" "$2" 2>/dev/null)" = True ]; }
wait_end() {
  "$bin/gsched" wait "$1" --timeout 60s >/dev/null 2>&1
  is "$1" 'j["state"] not in ("PENDING", "RUNNING", "REQUEUED")' || fail "job $1 did not end: $(show "$1" j)"
}
# A job script's wait for gate NAME (at most 30 s, so that no task outlives the test by long).
gate_wait() {
  printf 'i=0\nwhile [ ! -e %s/%s ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n' "$gates" "$1"
}
gate() { touch "$gates/$1"; }
# gated_job NAME: a 1-node job that runs until gate NAME opens; prints its id once it runs.
gated_job() {
  local id
  printf 'name = "%s"\n[resources]\nnodes = 1\n[run]\nscript = """\n%s\n"""\n' "$1" \
    "$(gate_wait "$1")" > "$1.toml"
  id=$(submit "$1.toml") || exit 1
  "$bin/gsched" wait "$id" --start --timeout 30s >/dev/null || fail "job $1 did not start: $(show "$id" j)"
  echo "$id"
}
has() { grep -Eq -- "$2" "$1" 2>/dev/null || fail "$1 has no line matching '$2'; it holds: $(cat "$1" 2>&1)"; }
# parked KEY: gschedd has had a get for KEY waiting (gsched kv get waits 20 s at a time).
parked() { grep -Eq "key=\"$1\" timeout_ms=[0-9]+ kv get waits" "$tmp/gschedd.log"; }
# withdrawn KEY: the CLI of a waiting get for KEY went away and gschedd let the get go.
withdrawn() { grep -q "key=\"$1\" kv get withdrawn" "$tmp/gschedd.log"; }
# expect_fail OUT-FILE PATTERN COMMAND...: COMMAND exits 1 and says PATTERN on stderr.
expect_fail() {
  local out=$1 pattern=$2 rc
  shift 2
  "$@" > "$out" 2>&1
  rc=$?
  [ $rc = 1 ] || fail "'$*' exited $rc, not 1: $(cat "$out")"
  has "$out" "$pattern"
}
# kv ARGS...: gsched kv in the foreground (a function: background the program itself, so
# that $! is its pid).
kv() { "$bin/gsched" kv "$@"; }

# --- a 2-node job rendezvous through the workers' sockets --------------------------------------
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(0, 256, 2)))' > "$tmp/blob" # not UTF-8
uid=$(python3 -c 'print(bytes(range(255, 127, -1)).hex())') # 128 bytes, as an ncclUniqueId
cat > rendezvous.toml <<EOF
name = "rendezvous"
[resources]
nodes = 2
[run]
tasks_per_node = 1
script = """
echo "SOCK=\$GSCHED_SOCKET"
if [ "\$RANK" = 0 ]; then
  i=0
  while ! grep -q 'key="id" timeout_ms=20000 kv get waits' $tmp/gschedd.log && [ \$i -lt 600 ]; do
    sleep 0.05; i=\$((i+1))
  done
  $bin/gsched kv put id "nccl-\$GSCHED_JOB_ID"
  echo "PUT rc=\$?"
  $bin/gsched kv put blob --file $tmp/blob --json
  echo "PUTBLOB rc=\$?"
  echo "CPUT \$($client put uid $uid)"
else
  v=\$($bin/gsched kv get id --timeout 30)
  echo "GOT \$v rc=\$?"
  $bin/gsched kv get blob --timeout 30 --json > $work/blob.json
  echo "GETBLOB rc=\$?"
  echo "CGET \$($client get uid 30000)"
fi
"""
EOF
j=$(submit rendezvous.toml) || exit 1
wait_end "$j"
is "$j" 'j["state"] == "COMPLETED"' ||
  fail "rendezvous job: $(show "$j" j); task 0: $(cat "gsched-$j-0.out"); task 1: $(cat "gsched-$j-1.out")"
has "gsched-$j-0.out" "^SOCK=$tmp/node[12]\\.sock\$"
has "gsched-$j-1.out" "^SOCK=$tmp/node[12]\\.sock\$"
has "gsched-$j-0.out" '^PUT rc=0$'
has "gsched-$j-0.out" "^\\{\"job_id\":$j,\"key\":\"blob\",\"keys\":2\\}\$"
has "gsched-$j-0.out" '^PUTBLOB rc=0$'
has "gsched-$j-1.out" "^GOT nccl-$j rc=0\$"
has "gsched-$j-1.out" '^GETBLOB rc=0$'
has "gsched-$j-0.out" '^CPUT ok$'
has "gsched-$j-1.out" "^CGET $uid\$"
parked id || fail "task 1's get never waited in gschedd"
python3 - "$work/blob.json" "$tmp/blob" "$j" <<'PY' || fail "the binary value came back wrong: $(cat "$work/blob.json")"
import json, sys
d = json.load(open(sys.argv[1]))
blob = open(sys.argv[2], "rb").read()
assert d == {"job_id": int(sys.argv[3]), "key": "blob", "bytes": 128, "value": None,
             "value_hex": blob.hex()}, d
PY

out=$(env -u GSCHED_JOB_ID "$client" get uid 10)
[ $? = 1 ] && [[ $out == "rc=-2: kv get 'uid': not in a gsched job"* ]] || fail "kv_client outside a job: $out"

# --- from outside a running job, as its owner ------------------------------------------------
h=$(gated_job hold) || exit 1
expect_fail "$tmp/e1" "^gsched: job $h: key 'missing' is not set\$" kv get missing --job "$h"
expect_fail "$tmp/e2" "^gsched kv get: job $h: key 'missing' was not set within 0.3 s\$" \
  kv get missing --job "$h" --timeout 0.3
grep -q 'key="missing" timeout_ms=300 kv get waits' "$tmp/gschedd.log" ||
  fail "the get with --timeout 0.3 did not wait in gschedd"
expect_fail "$tmp/e3" "a key is 1 to 128 printable ASCII characters" kv put $'tab\tkey' v --job "$h"
expect_fail "$tmp/e4" "a key is 1 to 128 printable ASCII characters" \
  kv put "$(printf 'k%.0s' {1..129})" v --job "$h"
head -c 4097 /dev/zero > "$tmp/big"
expect_fail "$tmp/e5" "job $h: a value of 4097 bytes is over the 4096 bytes a key may hold" \
  kv put big --file "$tmp/big" --job "$h"
head -c 4096 /dev/zero | kv put big --file - --job "$h" || fail "a 4096-byte value was refused"
out=$(kv put k v1 --job "$h" --json) || fail "put k: $out"
[ "$out" = "{\"job_id\":$h,\"key\":\"k\",\"keys\":2}" ] || fail "put --json printed '$out'"
kv put k "value two" --job "$h" || fail "a second put of k was refused"
out=$(kv get k --job "$h") || fail "get k: $out"
[ "$out" = "value two" ] || fail "get k printed '$out', not the second put's value"
out=$(kv get k --job "$h" --json) || fail "get k --json: $out"
[ "$out" = "{\"job_id\":$h,\"key\":\"k\",\"bytes\":9,\"value\":\"value two\"}" ] ||
  fail "get --json printed '$out'"

# --- a waiting get whose CLI goes away, on gschedd's socket and through a worker -------------
"$bin/gsched" kv get gone --job "$h" --timeout 60 >/dev/null 2>&1 &
cli=$!
wait_for "the get of 'gone' to wait" parked gone
{ kill -9 "$cli" && wait "$cli"; } 2>/dev/null # bash would say "Killed"
wait_for "the get of 'gone' to be withdrawn" withdrawn gone
hnode=$("$bin/gsched" squeue -h -j "$h" -o %N) # a node relays only for users with a job there
GSCHED_SOCKET=$tmp/$hnode.sock "$bin/gsched" kv get gone2 --job "$h" --timeout 60 >/dev/null 2>&1 &
cli=$!
wait_for "the relayed get of 'gone2' to wait" parked gone2
{ kill -9 "$cli" && wait "$cli"; } 2>/dev/null # bash would say "Killed"
wait_for "the get of 'gone2' to be withdrawn" withdrawn gone2
kv put gone x --job "$h" 2>"$tmp/e7" && kv put gone2 y --job "$h" 2>>"$tmp/e7" ||
  fail "puts after their getters went away: $(cat "$tmp/e7")"
kill -0 "$sched" || fail "gschedd died with a waiting get's CLI"

# --- at most 64 keys: big, k, gone, gone2 and 60 more ---------------------------------------
for i in $(seq 5 63); do kv put "key$i" "$i" --job "$h" || fail "put of key $i of 64 refused"; done
out=$(kv put key64 64 --job "$h" --json) || fail "put of the 64th key: $out"
[ "$out" = "{\"job_id\":$h,\"key\":\"key64\",\"keys\":64}" ] || fail "the 64th put printed '$out'"
expect_fail "$tmp/e6" "job $h has 64 keys already: no more are kept" kv put one-more x --job "$h"
kv put key64 replaced --job "$h" || fail "replacing a key of a full store was refused"

# --- another uid is refused, on gschedd's socket and through a worker -----------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
  setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/gsched" --version >/dev/null 2>&1; then
  chmod o+x "$tmp"
  as_nobody() { (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/gsched" "$@"); }
  expect_fail "$tmp/e8" "job $h: only its owner or root may use its key/value store" \
    as_nobody kv put k stolen --job "$h"
  # Through a worker: refused before the store is asked (that uid has no job on node2).
  expect_fail "$tmp/e9" "uid 65534 has no running job on node2" \
    env GSCHED_SOCKET="$tmp/node2.sock" setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$bin/gsched" kv get k --job "$h"
  [ "$(kv get k --job "$h")" = "value two" ] || fail "k changed after another uid's put"
else
  echo "$name: not root (or no setpriv): the other-uid checks are skipped"
fi

# --- a waiting get is answered when its job is cancelled -------------------------------------
"$bin/gsched" kv get never --job "$h" --timeout 60 >"$tmp/never.out" 2>"$tmp/never.err" &
cli=$!
wait_for "the get of 'never' to wait" parked never
"$bin/gsched" cancel "$h" >/dev/null || fail "cancel $h refused"
ended() { ! kill -0 "$cli" 2>/dev/null; }
wait_for "the waiting get to be answered after the cancel" ended
wait "$cli"
rc=$?
[ $rc = 1 ] || fail "the get waiting on a cancelled job exited $rc: $(cat "$tmp/never.err")"
has "$tmp/never.err" "^gsched: job $h is CANCELLED: it stopped running before key 'never' was set\$"
wait_end "$h"
expect_fail "$tmp/e10" "job $h is CANCELLED: its key/value store is kept only while it runs" \
  kv get k --job "$h"

# --- requeued: a waiting get is answered, the next attempt starts empty ------------------------
r=$(gated_job again) || exit 1
kv put k first --job "$r" || fail "put to job again refused"
"$bin/gsched" kv get later --job "$r" --timeout 60 >/dev/null 2>"$tmp/later.err" &
cli=$!
wait_for "the get of 'later' to wait" parked later
"$bin/gsched" scontrol requeue "$r" >/dev/null || fail "requeue $r refused"
wait_for "the waiting get to be answered after the requeue" ended
wait "$cli"
has "$tmp/later.err" "^gsched: job $r was requeued before key 'later' was set"
wait_for "job again to run its second attempt" is "$r" 'j["state"] == "RUNNING" and j["restart_count"] == 1'
expect_fail "$tmp/e11" "^gsched: job $r: key 'k' is not set\$" kv get k --job "$r"
gate again
wait_end "$r"
is "$r" 'j["state"] == "COMPLETED"' || fail "job again: $(show "$r" j)"

# --- an orderly stop; the sanitizer build reports leaks and misuse into the logs -------------
kill -TERM "${workers[@]}" "$sched"
stopped() { for p in "${workers[@]}" "$sched"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
wait_for "the daemons to stop" stopped
if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp"/*.log; then
  fail "sanitizer report in a daemon's log"
fi
echo "$name: ok"
