#!/bin/bash
# learns.sh BIN SRC: gsched-train learns: on shards of the licence texts under
# /usr/share/common-licenses, 150 steps of a small model bring the held-out loss well below
# the unigram entropy of the training bytes (the best a model that ignores context can do).
# Deterministic: the same binary gives the same losses on every run.
set -u
bin=$(cd "$1" && pwd) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
name=trainer_learns
py=$(python3 -c 'import sys; print(sys.executable)') || exit 1

fail() {
  echo "$name: $*" >&2
  exit 1
}

"$bin/gsched" shard build --out "$tmp/data" --val-fraction 0.05 /usr/share/common-licenses/* \
  > "$tmp/build.log" 2>&1 || fail "shard build: $(cat "$tmp/build.log")"
cat > "$tmp/small.toml" << EOF2
out_dir = "$tmp/run"
[model]
layers = 2
heads = 4
channels = 64
context = 64
[data]
dir = "$tmp/data"
[batch]
global_tokens = 1024
micro = 16
[optim]
lr = 3e-3
min_lr = 3e-4
warmup_steps = 5
steps = 150
[eval]
every = 150
batches = 8
[metrics]
log_every = 50
EOF2
"$bin/gsched-train" train "$tmp/small.toml" > "$tmp/train.log" 2>&1 ||
  fail "training failed: $(cat "$tmp/train.log")"
"$py" - "$tmp/data" "$tmp/run/metrics.jsonl" << 'PY' || fail "$(cat "$tmp/train.log")"
import collections, glob, json, math, sys
data = b"".join(open(f, "rb").read()[64:] for f in sorted(glob.glob(sys.argv[1] + "/train-*.bin")))
counts = collections.Counter(data)
entropy = -sum(c / len(data) * math.log(c / len(data)) for c in counts.values())
evals = [json.loads(l)["loss"] for l in open(sys.argv[2]) if '"kind":"eval"' in l]
print("unigram entropy %.3f nats, eval loss %.3f" % (entropy, evals[-1]))
sys.exit(0 if evals and evals[-1] < entropy - 0.2 else 1)
PY
echo "$name: all checks passed"
