#!/bin/bash
# ddp.sh BIN MODE: data-parallel gsched-train under Open MPI (MODE mpi; otherwise only the
# single-rank parts run). On shards of the licence texts:
#   - 2 ranks with global batch B train like 1 rank with global batch B: every train and
#     eval loss of 20 steps within 1e-5 (relative), with gradient buckets overlapped with
#     backward, with overlap off, and (within 1e-2) with bf16 all-reduce;
#   - a 2-rank run stopped at step 10 resumes with 1 rank and ends where the 1-rank run does;
#   - rank 0 alone writes metrics and checkpoints.
set -u
bin=$(cd "$1" && pwd) || exit 1
mode=${2:-local}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
name=trainer_ddp
py=$(python3 -c 'import sys; print(sys.executable)') || exit 1

fail() {
  echo "$name: $*" >&2
  exit 1
}

if [ "$mode" != mpi ]; then
  echo "$name: built without MPI; nothing to run"
  exit 0
fi
mpi() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 \
    mpirun -np "$1" --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
    "${@:2}"
}

"$bin/gsched" shard build --out "$tmp/data" --val-fraction 0.05 /usr/share/common-licenses/* \
  > "$tmp/build.log" 2>&1 || fail "shard build: $(cat "$tmp/build.log")"
cat > "$tmp/ddp.toml" << EOF2
[model]
layers = 2
heads = 2
channels = 64
context = 64
[data]
dir = "$tmp/data"
[batch]
global_tokens = 1024
micro = 4
[optim]
lr = 3e-3
warmup_steps = 2
steps = 20
[eval]
every = 10
batches = 2
[checkpoint]
every = 10
[ddp]
bucket_mib = 1
first_bucket_mib = 1
check_every = 5
EOF2

# same A B TOLERANCE: the runs' train and eval losses agree step by step.
same() {
  "$py" - "$1" "$2" "$3" << 'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
key = lambda r: (r["kind"], r["step"])
a, b = {key(r): r["loss"] for r in a}, {key(r): r["loss"] for r in b}
if a.keys() != b.keys():
    sys.exit("different records: %s vs %s" % (sorted(a), sorted(b)))
worst = max(abs(a[k] - b[k]) / abs(a[k]) for k in a)
print("%d records, worst relative difference %.2e" % (len(a), worst))
sys.exit(0 if worst <= float(sys.argv[3]) else "worst relative difference %.2e" % worst)
PY
}

"$bin/gsched-train" train "$tmp/ddp.toml" --out_dir="$tmp/one" > "$tmp/one.log" 2>&1 ||
  fail "1 rank: $(cat "$tmp/one.log")"
mpi 2 "$bin/gsched-train" train "$tmp/ddp.toml" --out_dir="$tmp/two" > "$tmp/two.log" 2>&1 ||
  fail "2 ranks: $(cat "$tmp/two.log")"
grep -q 'data parallel: 2 ranks (mpi)' "$tmp/two.log" || fail "not data parallel: $(cat "$tmp/two.log")"
[ "$(grep -c '^done: 20 steps' "$tmp/two.log")" = 1 ] || fail "rank 0 alone reports: $(cat "$tmp/two.log")"
grep -q '"ranks":2,"comm_ms":' "$tmp/two/metrics.jsonl" || fail "no comm metrics"
same "$tmp/one/metrics.jsonl" "$tmp/two/metrics.jsonl" 1e-5 || fail "2 ranks differ from 1"

mpi 2 "$bin/gsched-train" train "$tmp/ddp.toml" --out_dir="$tmp/noov" --ddp.overlap=false \
  > "$tmp/noov.log" 2>&1 || fail "overlap off: $(cat "$tmp/noov.log")"
same "$tmp/one/metrics.jsonl" "$tmp/noov/metrics.jsonl" 1e-5 || fail "overlap off differs"
mpi 2 "$bin/gsched-train" train "$tmp/ddp.toml" --out_dir="$tmp/bf16" --ddp.allreduce=bf16 \
  > "$tmp/bf16.log" 2>&1 || fail "bf16 all-reduce: $(cat "$tmp/bf16.log")"
same "$tmp/one/metrics.jsonl" "$tmp/bf16/metrics.jsonl" 1e-2 || fail "bf16 all-reduce too far"

# Stopped at step 10 with 2 ranks, resumed with 1: the data order does not depend on ranks.
GSCHED_TRAIN_SIGNAL_AT=10 mpi 2 "$bin/gsched-train" train "$tmp/ddp.toml" --out_dir="$tmp/re" \
  > "$tmp/re1.log" 2>&1
status=$?
[ $status = 75 ] || fail "stopped 2-rank run: exit $status, want 75: $(cat "$tmp/re1.log")"
"$bin/gsched-train" train "$tmp/ddp.toml" --out_dir="$tmp/re" > "$tmp/re2.log" 2>&1 ||
  fail "resumed with 1 rank: $(cat "$tmp/re2.log")"
grep -q 'resuming from .*ckpt-00000010.gstf at step 10' "$tmp/re2.log" || fail "$(cat "$tmp/re2.log")"
same "$tmp/one/metrics.jsonl" "$tmp/re/metrics.jsonl" 1e-5 || fail "2-then-1 ranks differ from 1"
echo "$name: all checks passed"
