#!/usr/bin/env bash
# train_cpu.sh [BUILD_DIR] [STEPS] [REPS]: gsched-train's CPU speed on model "S" (6 layers,
# 6 heads, 384 channels, context 256, byte vocabulary, micro-batch 8, one micro-batch per
# step, AdamW), fp32 and bf16, all cores, against PyTorch eager on the same model and thread
# count in the same run (bench/train_torch.py, Debian's python3-torch).
# The peer runs on Debian's OpenMP build of OpenBLAS (libopenblas0-openmp), the faster of
# Debian's threaded builds here: on the pthread build (libopenblas0-pthread, which
# update-alternatives prefers when both are installed) its fp32 step is ~1.7x slower, the
# BLAS's threads fighting torch's OpenMP ones, and on the reference BLAS (libblas3) ~50x
# slower. The system's alternatives are left alone: only the peer's process gets
# LD_LIBRARY_PATH=/usr/lib/<multiarch>/openblas-openmp, and train_torch.py checks in
# /proc/self/maps and with openblas_get_parallel() that it mapped that build (it stops
# otherwise), and prints the file and thread counts. Missing libopenblas0-openmp is an error;
# missing python3-torch skips the peer, saying so.
# REPS (default 3) repetitions; in each, per precision, gsched-train and the peer run back to
# back, gsched-train first in odd repetitions and the peer first in even ones. With
# libopenblas0-pthread installed (and PEER_PTHREAD not 0) the peer also runs on it, as a
# secondary row that no headline ratio uses.
# Prints each run's median tokens/s and ms/step and the share of the CPUs other work took
# meanwhile, then per precision the medians over repetitions and the ratios' median and range,
# over all pairs and over the quiet ones (others under QUIET%, default 10, in both runs); then
# a callgrind instruction count of one training step of a small config (repeatable where
# timings are not).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-8}
reps=${3:-3}
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

torch_py=/usr/bin/python3
multiarch=$("$torch_py" -c 'import sysconfig; print(sysconfig.get_config_var("MULTIARCH") or "")')
omp_dir=${OPENBLAS_OPENMP_DIR:-/usr/lib/$multiarch/openblas-openmp}
pth_dir=/usr/lib/$multiarch/openblas-pthread
peer=1 pthread=0
if ! "$torch_py" -c 'import torch' 2> /dev/null; then
  echo "train_cpu: PyTorch peer SKIPPED: $torch_py cannot import torch" \
    "(apt-get install python3-torch libopenblas0-openmp); no ratios" >&2
  peer=0
elif [ ! -e "$omp_dir/libopenblas.so.0" ]; then
  echo "train_cpu: $omp_dir/libopenblas.so.0 is missing: install libopenblas0-openmp;" \
    "the peer is compared on its OpenMP OpenBLAS build only" >&2
  exit 1
elif [ "${PEER_PTHREAD:-1}" != 0 ] && [ -e "$pth_dir/libopenblas.so.0" ]; then
  pthread=1
fi

# cpu_mark: sets mark to "BUSY TOTAL OWN": the machine's busy and total jiffies over all CPUs
# (steal counts as busy) and the CPU jiffies of this shell's finished children (so it must
# run in this shell, not in $(...)). others START END: the share of the machine's CPU time
# between two marks that went to anything but this script's runs (other jobs, other VMs), in %.
clk=$(getconf CLK_TCK)
cpu_mark() {
  times > "$tmp/times"
  mark=$(awk -v hz="$clk" 'NR == 2 { gsub(/s/, ""); split($0, f, /[m ]/)
      own = (f[1] * 60 + f[2] + f[3] * 60 + f[4]) * hz }
    /^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, own }' \
    "$tmp/times" /proc/stat)
}
others() {
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ")
    printf "%.0f\n", 100 * ((y[1] - x[1]) - (y[3] - x[3])) / (y[2] - x[2]) }'
}

# run_ours P REP / run_peer KIND DIR P REP: one run, its line printed (ending with others=:
# the CPU share other work took meanwhile) and "P WHO TPS MS OTHERS" appended to $tmp/results
# (TPS and MS: the run's median tokens/s and ms/step).
run_ours() {
  local start o
  cpu_mark; start=$mark
  OMP_NUM_THREADS=$threads "$bin/gsched-train" train "$tmp/s.toml" --precision="$1" \
    --out_dir="$tmp/run-$1-$2" --metrics.log_every=1000 > "$tmp/$1-$2.log"
  cpu_mark; o=$(others "$start" "$mark")
  read -r tps ms <<< "$(median "$tmp/run-$1-$2")"
  echo "rep=$2 gsched-train precision=$1 tokens_per_s=$tps ms_per_step=$ms others=$o%"
  echo "$1 gsched $tps $ms $o" >> "$tmp/results"
}
run_peer() {
  local start o line
  cpu_mark; start=$mark
  line=$(LD_LIBRARY_PATH=$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_NUM_THREADS=$threads \
    "$torch_py" "$src/bench/train_torch.py" --precision "$3" --steps "$steps" \
    --threads "$threads" --require-blas "$1")
  cpu_mark; o=$(others "$start" "$mark")
  echo "rep=$4 $line others=$o%"
  local rate
  rate=$(sed -n 's/.*tokens_per_s=\([0-9]*\) ms_per_step=\([0-9.]*\).*/\1 \2/p' <<< "$line")
  echo "$3 torch-$1 $rate $o" >> "$tmp/results"
}

echo "train_cpu: model S, micro-batch 8 x 256 tokens, $threads threads, $steps timed steps," \
  "$reps repetitions; peer: PyTorch eager on OpenBLAS from $omp_dir"
: > "$tmp/results"
for ((r = 1; r <= reps; r++)); do
  for p in fp32 bf16; do
    if ((peer && r % 2 == 0)); then run_peer openmp "$omp_dir" $p $r; fi
    run_ours $p $r
    if ((peer && r % 2 == 1)); then run_peer openmp "$omp_dir" $p $r; fi
    if ((pthread)); then run_peer pthread "$pth_dir" $p $r; fi
  done
done

# Per precision: median tokens/s (ms/step) of each over the repetitions; the ratios
# gsched/peer of each repetition's pair, their median and range; the same over the quiet
# pairs, where other work took under QUIET% (default 10) of the CPUs during both runs.
python3 - "$tmp/results" "${QUIET:-10}" << 'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p, who, tps, ms, others = line.split()
    runs[p, who].append((float(tps), float(ms), float(others)))
quiet = float(sys.argv[2])
def spread(xs, f="%.2f"):
    return (f + " (range " + f + "-" + f + ")") % (statistics.median(xs), min(xs), max(xs))
for p in ("fp32", "bf16"):
    ours = runs[p, "gsched"]
    print("median precision=%s gsched-train tokens_per_s=%s ms_per_step=%.1f" %
          (p, spread([r[0] for r in ours], "%.0f"), statistics.median(r[1] for r in ours)))
    for who in ("torch-openmp", "torch-pthread"):
        peer = runs.get((p, who))
        if not peer:
            continue
        tag = "" if who == "torch-openmp" else " [secondary: the slower pthread OpenBLAS]"
        pairs = list(zip(ours, peer))
        print("median precision=%s %s tokens_per_s=%s ms_per_step=%.1f%s" %
              (p, who, spread([r[0] for r in peer], "%.0f"),
               statistics.median(r[1] for r in peer), tag))
        print("ratio precision=%s gsched/%s = %s; per repetition %s%s" %
              (p, who, spread([o[0] / t[0] for o, t in pairs]),
               " ".join("%.2f" % (o[0] / t[0]) for o, t in pairs), tag))
        q = [(o, t) for o, t in pairs if o[2] < quiet and t[2] < quiet]
        print("ratio precision=%s gsched/%s quiet pairs (others < %g%%: %d of %d) = %s%s" %
              (p, who, quiet, len(q), len(pairs),
               spread([o[0] / t[0] for o, t in q]) if q else "-", tag))
PY

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
