#!/usr/bin/env bash
# train_cpu.sh [BUILD_DIR] [STEPS]: gsched-train's CPU speed on model "S" (6 layers, 6 heads,
# 384 channels, context 256, byte vocabulary, micro-batch 8, one micro-batch per step, AdamW),
# fp32 and bf16, all cores, against PyTorch eager on the same model and thread count in the
# same run (bench/train_torch.py; Debian's python3-torch, skipped when it is missing; install
# libopenblas0-pthread too, or Debian's torch runs fp32 matmuls on the reference BLAS, ~50x
# slower).
# Prints the median tokens/s and ms/step of each and the ratios, then a callgrind instruction
# count of one training step of a small config (repeatable where timings are not).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-8}
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
threads=$(nproc)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-train-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$bin/gsched" shard build --out "$tmp/data" --val-fraction 0.05 /usr/share/common-licenses/* > /dev/null
cat > "$tmp/s.toml" << EOF2
[model]
layers = 6
heads = 6
channels = 384
context = 256
vocab = 256
[data]
dir = "$tmp/data"
[batch]
global_tokens = 2048
micro = 8
[optim]
warmup_steps = 0
steps = $((steps + 2))
[eval]
every = 0
[checkpoint]
every = 0
EOF2

# median_tps RUN_DIR: median tokens/s and ms/step of the train records after the first two.
median() {
  python3 - "$1" << 'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
recs = [r for r in recs if r["kind"] == "train"][2:]
print("%.0f %.1f" % (statistics.median(r["tokens_per_s"] for r in recs),
                     statistics.median(r["step_ms"] for r in recs)))
PY
}

declare -A ours theirs
echo "train_cpu: model S, micro-batch 8 x 256 tokens, $threads threads, $steps timed steps"
for p in fp32 bf16; do
  OMP_NUM_THREADS=$threads "$bin/gsched-train" train "$tmp/s.toml" --precision=$p \
    --out_dir="$tmp/run-$p" --metrics.log_every=1000 > "$tmp/$p.log"
  read -r tps ms <<< "$(median "$tmp/run-$p")"
  ours[$p]=$tps
  echo "gsched-train precision=$p tokens_per_s=$tps ms_per_step=$ms"
  if /usr/bin/python3 -c 'import torch' 2> /dev/null; then
    line=$(/usr/bin/python3 "$src/bench/train_torch.py" --precision $p --steps "$steps" --threads "$threads")
    echo "$line"
    theirs[$p]=$(sed -n 's/.*tokens_per_s=\([0-9]*\).*/\1/p' <<< "$line")
    python3 -c "print('ratio precision=$p gsched/torch = %.2f' % (${ours[$p]} / ${theirs[$p]}))"
  fi
done

if command -v valgrind > /dev/null; then
  # One step of a small config, counted from the model's entry points only (setup excluded).
  OMP_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
    --collect-atstart=no --toggle-collect=trn_model_forward --toggle-collect=trn_model_backward \
    --toggle-collect=trn_model_grad_prepare --toggle-collect=trn_model_adamw \
    "$bin/gsched-train" train "$tmp/s.toml" --out_dir="$tmp/cg" --optim.steps=1 \
    --model.layers=2 --model.context=32 --batch.global_tokens=128 --batch.micro=4 \
    > /dev/null 2> "$tmp/cg.log"
  ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$tmp/cg.out")
  echo "callgrind: one step of L=2 C=384 T=32 micro-batch 4 (fp32, 1 thread): $ir instructions"
fi
