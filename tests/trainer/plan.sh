#!/bin/bash
# plan.sh BIN MODE: gsched-train following a data plan (issue 19; sharding/planfile.h), as
# gsched-workerd starts it: GSCHED_DATA_PLAN names the job's plan file and GSCHED_DATA_DIR
# the node's cache, a copy of the dataset's manifest.toml with only the shards that node
# holds. On shards of the licence texts:
#   - one rank: the plan's dataset id must be the cache's, world must be the plan's ranks,
#     GSCHED_DATA_DIR is required, data.plan = "off" ignores the plan, and a rank whose
#     shards are not all in its cache fails naming one it lacks;
#   - two ranks under mpirun (MODE mpi; otherwise skipped): two "nodes" whose caches hold
#     complementary halves of the train shards (and every val shard), rank r on node r; the
#     job trains and evaluates, each rank reading only shards its own directory holds (the
#     others are not there to open); stopped at step 10 and resumed with the same plan, the
#     losses are bitwise those of the straight run; resumed under another assignment (ranks
#     swapped between the nodes), the run says so and reads the rest of epoch 0 (the samples
#     it has not read), its checkpoints carrying that rest so that a third run goes on in
#     it; without the old plan beside the checkpoints it continues at the next epoch;
#     resumed without a plan at all, it reads the rest of epoch 0 as well.
set -u
name=trainer_plan
. "$(dirname "$0")/lib.sh"
trn_test_start "$1"
mode=${2:-local}

"$bin/gsched" shard build --out "$tmp/data" --shard-tokens 20000 --val-fraction 0.05 \
  /usr/share/common-licenses/* > "$tmp/build.log" 2>&1 || fail "shard build: $(cat "$tmp/build.log")"
"$bin/gsched" shard info "$tmp/data" --json > "$tmp/info.json" || fail "shard info"

# node_dirs: node0 holds the first half of the train shards, node1 the rest; both every val
# shard. Prints node0's and node1's holds lists (manifest indices).
read -r holds0 holds1 < <("$py" - "$tmp" << 'PY'
import json, os, shutil, sys
tmp = sys.argv[1]
shards = json.load(open(os.path.join(tmp, "info.json")))["shards"]
train = [i for i, s in enumerate(shards) if s["split"] == "train"]
val = [i for i, s in enumerate(shards) if s["split"] == "val"]
assert len(train) >= 4 and val, shards
half = (len(train) + 1) // 2
nodes = [train[:half] + val, train[half:] + val]
for n, held in enumerate(nodes):
    d = os.path.join(tmp, "node%d" % n)
    os.mkdir(d)
    shutil.copy(os.path.join(tmp, "data", "manifest.toml"), d)
    for i in held:
        shutil.copy(os.path.join(tmp, "data", shards[i]["file"]), d)
print(",".join(map(str, nodes[0])), ",".join(map(str, nodes[1])))
PY
)
[ -n "$holds0" ] && [ -n "$holds1" ] || fail "could not split the dataset"
dataset=$("$py" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest()[:32])' \
  "$tmp/data/manifest.toml")

# plan FILE RANKS [DATASET]: a plan over the two nodes. The wide band keeps every shard with
# its holder (the halves differ by a shard), so no rank needs a shard its node lacks.
plan() {
  cat > "$1" << EOF2
format = 1
dataset = "${3:-$dataset}"
seed = 11
tolerance = 0.5
ranks = $2

[[node]]
name = "node0"
holds = "$holds0"
[[node]]
name = "node1"
holds = "$holds1"
EOF2
}
plan "$tmp/plan2.toml" "[0, 1]"
plan "$tmp/swapped.toml" "[1, 0]"
plan "$tmp/plan1.toml" "[0]"
plan "$tmp/other.toml" "[0]" 0123456789abcdef0123456789abcdef

# No data.dir: under a plan the data is GSCHED_DATA_DIR.
cat > "$tmp/tiny.toml" << EOF2
[model]
layers = 2
heads = 2
channels = 32
context = 32
[batch]
global_tokens = 256
micro = 4
[optim]
lr = 3e-3
warmup_steps = 2
steps = 20
[eval]
every = 10
batches = 2
[checkpoint]
every = 5
keep = 2
EOF2

# refuse WHAT REGEX ENV... -- ARGS...: gsched-train with ENV fails, its output matching REGEX.
refuse() {
  local what=$1 regex=$2 envs=()
  shift 2
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  if env "${envs[@]}" "$bin/gsched-train" train "$tmp/tiny.toml" --optim.steps=2 "$@" \
    > "$tmp/refused.log" 2>&1; then
    fail "$what: accepted"
  fi
  grep -qE -- "$regex" "$tmp/refused.log" || fail "$what: want /$regex/: $(cat "$tmp/refused.log")"
}

# --- one rank ---------------------------------------------------------------------------------
refuse "no dataset" 'data.dir is required' -- --out_dir="$tmp/x"
refuse "another dataset's plan" "is for dataset 0123456789abcdef0123456789abcdef, but GSCHED_DATA_DIR $tmp/data holds dataset $dataset" \
  GSCHED_DATA_PLAN="$tmp/other.toml" GSCHED_DATA_DIR="$tmp/data" -- --out_dir="$tmp/x"
refuse "no GSCHED_DATA_DIR" "GSCHED_DATA_PLAN=$tmp/plan1.toml is set without GSCHED_DATA_DIR" \
  GSCHED_DATA_PLAN="$tmp/plan1.toml" -- --out_dir="$tmp/x"
refuse "a plan for 2 ranks on 1" "world 1 is not the data plan's 2 ranks" \
  GSCHED_DATA_PLAN="$tmp/plan2.toml" GSCHED_DATA_DIR="$tmp/node0" -- --out_dir="$tmp/x"
# One rank reads every train shard; node0's cache lacks node1's (a worker would stage them).
refuse "a cache without the rank's shards" "node0/train-[0-9]+\.bin" \
  GSCHED_DATA_PLAN="$tmp/plan1.toml" GSCHED_DATA_DIR="$tmp/node0" -- --out_dir="$tmp/x"
[ ! -e "$tmp/x/metrics.jsonl" ] || fail "a refused run trained"

GSCHED_DATA_PLAN="$tmp/plan1.toml" GSCHED_DATA_DIR="$tmp/data" "$bin/gsched-train" train \
  "$tmp/tiny.toml" --optim.steps=3 --out_dir="$tmp/one" > "$tmp/one.log" 2>&1 ||
  fail "one rank under a plan: $(cat "$tmp/one.log")"
grep -q "data: rank 0 reads GSCHED_DATA_DIR=$tmp/data, not data.dir, by the plan $tmp/plan1.toml" \
  "$tmp/one.log" || fail "no plan line: $(cat "$tmp/one.log")"
grep -qE "data: rank 0 reads [0-9]+ of the plan's train shards \([0-9]+ on its node\)" "$tmp/one.log" ||
  fail "no shards line: $(cat "$tmp/one.log")"
grep -q '^done: 3 steps' "$tmp/one.log" || fail "one rank: $(cat "$tmp/one.log")"
# The assignment is kept beside the checkpoints, named by the digest they record.
kept=$(ls "$tmp/one/checkpoints"/data-plan-*.toml 2> /dev/null)
[ "$(echo "$kept" | wc -w)" = 1 ] || fail "kept plans: '$kept'"
grep -q "^dataset = \"$dataset\"" "$kept" || fail "the kept plan: $(cat "$kept")"

GSCHED_DATA_PLAN="$tmp/plan2.toml" GSCHED_DATA_DIR="$tmp/node0" "$bin/gsched-train" train \
  "$tmp/tiny.toml" --optim.steps=2 --data.plan=off --data.dir="$tmp/data" --out_dir="$tmp/off" \
  > "$tmp/off.log" 2>&1 || fail "data.plan = off: $(cat "$tmp/off.log")"
grep -q 'data.plan = "off": GSCHED_DATA_PLAN ignored' "$tmp/off.log" || fail "$(cat "$tmp/off.log")"
! grep -q 'reads GSCHED_DATA_DIR' "$tmp/off.log" || fail "data.plan = off followed the plan"

if [ "$mode" != mpi ]; then
  echo "$name: built without MPI; the one-rank checks passed, the two-rank ones did not run"
  exit 0
fi

# --- two ranks on two "nodes" -----------------------------------------------------------------
# rank.sh: each rank's GSCHED_DATA_DIR is its node's cache (node r, or 1 - r with SWAP=1).
cat > "$tmp/rank.sh" << 'EOF2'
#!/bin/bash
r=${OMPI_COMM_WORLD_RANK:?not under mpirun}
[ "${SWAP:-0}" = 1 ] && r=$((1 - r))
export GSCHED_DATA_DIR=$NODES/node$r
exec "$@"
EOF2
chmod +x "$tmp/rank.sh"
export NODES=$tmp

# losses FILE: "step loss" per train record, the loss as the exact decimal it was written.
losses() {
  "$py" -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line, parse_float=str)
    if r["kind"] == "train":
        print(r["step"], r["loss"])' "$1"
}


GSCHED_DATA_PLAN="$tmp/plan2.toml" mpi 2 "$tmp/rank.sh" "$bin/gsched-train" train \
  "$tmp/tiny.toml" --out_dir="$tmp/a" > "$tmp/a.log" 2>&1 || fail "2 ranks: $(cat "$tmp/a.log")"
grep -q 'data parallel: 2 ranks (mpi)' "$tmp/a.log" || fail "not data parallel: $(cat "$tmp/a.log")"
grep -q '^done: 20 steps' "$tmp/a.log" || fail "no done line: $(cat "$tmp/a.log")"
for r in 0 1; do
  held=$holds0
  [ $r = 1 ] && held=$holds1
  n=$(($(echo "$held" | tr ',' '\n' | wc -l) - 1)) # its train shards: less the val shard
  grep -q "data: rank $r reads GSCHED_DATA_DIR=$tmp/node$r, not data.dir" "$tmp/a.log" ||
    fail "rank $r: no plan line: $(cat "$tmp/a.log")"
  # The rank reads exactly its node's train shards, all local.
  grep -q "data: rank $r reads $n of the plan's train shards ($n on its node)" "$tmp/a.log" ||
    fail "rank $r: not its node's $n shards: $(grep "rank $r" "$tmp/a.log")"
done
[ "$(losses "$tmp/a/metrics.jsonl" | wc -l)" = 20 ] || fail "not 20 train records"
grep -q '"kind":"eval","step":19,' "$tmp/a/metrics.jsonl" || fail "no eval at the end"

# Stopped after step 10 and resumed with the same plan: bitwise the same losses.
GSCHED_TRAIN_SIGNAL_AT=10 GSCHED_DATA_PLAN="$tmp/plan2.toml" mpi 2 "$tmp/rank.sh" \
  "$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/b" > "$tmp/b1.log" 2>&1
status=$?
[ $status = 75 ] || fail "stopped 2-rank run: exit $status, want 75: $(cat "$tmp/b1.log")"
GSCHED_DATA_PLAN="$tmp/plan2.toml" mpi 2 "$tmp/rank.sh" "$bin/gsched-train" train \
  "$tmp/tiny.toml" --out_dir="$tmp/b" > "$tmp/b2.log" 2>&1 || fail "resumed: $(cat "$tmp/b2.log")"
grep -q 'resuming from .*ckpt-00000010.gstf at step 10' "$tmp/b2.log" || fail "$(cat "$tmp/b2.log")"
! grep -q 'another data assignment' "$tmp/b2.log" || fail "the same plan moved the position"
losses "$tmp/a/metrics.jsonl" > "$tmp/a.losses"
losses "$tmp/b/metrics.jsonl" > "$tmp/b.losses"
cmp -s "$tmp/a.losses" "$tmp/b.losses" ||
  fail "resumed losses differ from the straight run's: $(diff "$tmp/a.losses" "$tmp/b.losses")"

# Resumed under another assignment: rank 0 now on node1 (and reading its shards).
GSCHED_TRAIN_SIGNAL_AT=10 GSCHED_DATA_PLAN="$tmp/plan2.toml" mpi 2 "$tmp/rank.sh" \
  "$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/c" > "$tmp/c1.log" 2>&1
status=$?
[ $status = 75 ] || fail "stopped 2-rank run: exit $status, want 75: $(cat "$tmp/c1.log")"
mkdir -p "$tmp/d" && cp -r "$tmp/c/checkpoints" "$tmp/d/" # for the run without the old plan
mkdir -p "$tmp/e" && cp -r "$tmp/c/checkpoints" "$tmp/e/" # for the run without a plan
SWAP=1 GSCHED_DATA_PLAN="$tmp/swapped.toml" mpi 2 "$tmp/rank.sh" "$bin/gsched-train" train \
  "$tmp/tiny.toml" --out_dir="$tmp/c" > "$tmp/c2.log" 2>&1 || fail "swapped: $(cat "$tmp/c2.log")"
grep -q "data: rank 0 reads GSCHED_DATA_DIR=$tmp/node1" "$tmp/c2.log" || fail "$(cat "$tmp/c2.log")"
grep -qE 'data: the checkpoint.s position \(epoch 0, sample 80\) was reached under another data assignment .*: epoch 0 goes on with the samples it has not read$' \
  "$tmp/c2.log" || fail "no rest-of-epoch line: $(cat "$tmp/c2.log")"
for r in 0 1; do
  grep -qE "^data: epoch 0's rest: rank $r has [0-9]+ of its samples not read yet; [0-9]+ steps" \
    "$tmp/c2.log" || fail "no rest line for rank $r: $(cat "$tmp/c2.log")"
done
grep -q '^done: 20 steps' "$tmp/c2.log" || fail "swapped run did not finish: $(cat "$tmp/c2.log")"
# Its checkpoints carry the rest: resumed again under the same plan, it goes on inside it.
SWAP=1 GSCHED_DATA_PLAN="$tmp/swapped.toml" mpi 2 "$tmp/rank.sh" "$bin/gsched-train" train \
  "$tmp/tiny.toml" --out_dir="$tmp/c" --optim.steps=22 > "$tmp/c3.log" 2>&1 ||
  fail "resumed in the rest: $(cat "$tmp/c3.log")"
grep -q "^data: epoch 0's rest: rank 0 has" "$tmp/c3.log" || fail "no rest in c3: $(cat "$tmp/c3.log")"
! grep -q 'another data assignment' "$tmp/c3.log" || fail "c3 moved: $(cat "$tmp/c3.log")"
grep -q '^done: 22 steps' "$tmp/c3.log" || fail "c3 did not finish: $(cat "$tmp/c3.log")"
# Without the old plan beside the checkpoint the rest cannot be worked out: the next epoch.
rm -f "$tmp/d/checkpoints"/data-plan-*.toml
SWAP=1 GSCHED_DATA_PLAN="$tmp/swapped.toml" mpi 2 "$tmp/rank.sh" "$bin/gsched-train" train \
  "$tmp/tiny.toml" --out_dir="$tmp/d" > "$tmp/d.log" 2>&1 || fail "no old plan: $(cat "$tmp/d.log")"
grep -qE 'data: the checkpoint.s position \(epoch 0, sample 80\) was reached under another data assignment .*data-plan-[0-9a-f]{16}\.toml.*; continuing at the start of epoch 1$' \
  "$tmp/d.log" || fail "no next-epoch line: $(cat "$tmp/d.log")"
# Resumed without a plan (every shard in data.dir): the rest of epoch 0 too, read by the
# seeded order of the samples not read, as any planless epoch.
mpi 2 "$tmp/rank.sh" "$bin/gsched-train" train "$tmp/tiny.toml" --data.dir="$tmp/data" \
  --out_dir="$tmp/e" > "$tmp/e.log" 2>&1 || fail "no plan: $(cat "$tmp/e.log")"
grep -qE 'data: the checkpoint.s position \(epoch 0, sample 80\) was reached under another data assignment \(digest [0-9a-f]{16}, now 0{16}\): epoch 0 goes on with the samples it has not read$' \
  "$tmp/e.log" || fail "no rest-of-epoch line without a plan: $(cat "$tmp/e.log")"
grep -qE "^data: epoch 0's rest: [0-9]+ samples not read yet; [0-9]+ steps of them$" "$tmp/e.log" ||
  fail "no rest line without a plan: $(cat "$tmp/e.log")"
grep -q '^done: 20 steps' "$tmp/e.log" || fail "the planless run did not finish: $(cat "$tmp/e.log")"
echo "$name: all checks passed"
