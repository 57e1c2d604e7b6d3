#!/usr/bin/env bash
# ddp.sh [BUILD_DIR] [STEPS]: data-parallel gsched-train under Open MPI on this machine:
# ms/step of model S (6 layers, 384 channels, context 256, bytes; global batch 16 x 256
# tokens, micro-batch 4; one kernel thread per rank, so that 2 ranks fill the 2 cores as 1 rank
# fills one) for 1 rank, then 2 ranks with the all-reduce overlapped with backward and
# without (all buckets after backward), for bucket sizes of 1, 4 and 25 MiB. Prints the median
# step time, the all-reduce time and its exposed part, the overlap ratio and the scaling
# efficiency (tokens/s of 2 ranks / twice that of 1 rank), all from the same run.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-6}
bin=$build/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-ddp-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/model_s.sh"
model_s "$bin" "$tmp" "$steps" < /dev/null

mpi() {
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np "$1" --oversubscribe \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism none "${@:2}"
}

# report LABEL DIR: medians over the records after the first two.
report() {
  python3 - "$1" "$2" << 'PY'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[2] + "/metrics.jsonl")]
rs = [r for r in rs if r["kind"] == "train"][2:]
med = lambda k: statistics.median(r.get(k, 0) for r in rs)
comm, exp = med("comm_ms"), med("comm_exposed_ms")
print("%-26s ms/step %7.1f  tokens/s %6.0f  comm %6.1f ms  exposed %6.1f ms  overlap %s" % (
    sys.argv[1], med("step_ms"), med("tokens_per_s"), comm, exp,
    "%.2f" % max(0.0, 1 - exp / comm) if comm > 0 else "-"))
open(sys.argv[2] + "/tps", "w").write("%f" % med("tokens_per_s"))
PY
}

echo "ddp: model S, global batch 16 x 256, micro-batch 4, 1 kernel thread per rank, $steps timed steps"
"$bin/gsched-train" train "$tmp/s.toml" --out_dir="$tmp/r1" > /dev/null
report "1 rank" "$tmp/r1"
one=$(cat "$tmp/r1/tps")
for mib in 1 4 25; do
  for ov in true false; do
    mpi 2 "$bin/gsched-train" train "$tmp/s.toml" --out_dir="$tmp/r2-$mib-$ov" \
      --ddp.bucket_mib=$mib --ddp.overlap=$ov > /dev/null
    report "2 ranks, $mib MiB, overlap $ov" "$tmp/r2-$mib-$ov"
    python3 -c "print('  scaling efficiency %.2f' % ($(cat "$tmp/r2-$mib-$ov/tps") / (2 * $one)))"
  done
done
