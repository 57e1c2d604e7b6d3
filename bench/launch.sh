#!/usr/bin/env bash
# launch.sh [BUILD_DIR] [STEPS]: the same 2-rank data-parallel gsched-train run of model S
# (as bench/ddp.sh: 6 layers, 384 channels, context 256, global batch 16 x 256, micro-batch
# 4, 1 MiB buckets, one kernel thread per rank), started two ways in one run: by mpirun
# directly (one rank bound per core, Open MPI's shared-memory transport between them) and as
# a gsched job with launcher = "mpi" on a `gsched up` cluster of two workers, one core each
# (the ranks are then two "nodes" and talk over TCP). Prints the median ms/step, the
# all-reduce and exposed times, the overlap ratio, the wall time from start (or submit) to
# the end, and the gsched/mpirun ratios.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${2:-6}
bin=$build/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-launch-bench.XXXXXX")
cleanup() { "$bin/gsched" down --state "$tmp/state" > /dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
export PATH="$bin:$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

. "$(dirname "$0")/model_s.sh"
model_s "$bin" "$tmp" "$steps" << EOF2
[ddp]
bucket_mib = 1
EOF2

# report LABEL DIR WALL_S: medians over the records after the first two.
report() {
  python3 - "$@" << 'PY'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[2] + "/metrics.jsonl")]
rs = [r for r in rs if r["kind"] == "train"][2:]
med = lambda k: statistics.median(r.get(k, 0) for r in rs)
comm, exp = med("comm_ms"), med("comm_exposed_ms")
print("%-22s ms/step %7.1f  comm %6.1f ms  exposed %6.1f ms  overlap %.2f  wall %5.1f s" % (
    sys.argv[1], med("step_ms"), comm, exp, max(0.0, 1 - exp / comm), float(sys.argv[3])))
open(sys.argv[2] + "/step", "w").write("%f %s\n" % (med("step_ms"), sys.argv[3]))
PY
}
since() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$EPOCHREALTIME"; }

echo "launch: model S, 2 ranks, $steps timed steps, 1 MiB buckets"
t0=$EPOCHREALTIME
mpirun -np 2 --bind-to core "$bin/gsched-train" train "$tmp/s.toml" --out_dir="$tmp/direct" > /dev/null
report "mpirun directly" "$tmp/direct" "$(since "$t0")"

"$bin/gsched" up --workers 2 --gpus-per-node 0 --state "$tmp/state" > /dev/null
export GSCHED_SOCKET="$tmp/state/gschedd.sock"
cat > "$tmp/job.toml" << EOF2
[resources]
nodes = 2
cpus_per_task = 1
[run]
launcher = "mpi"
command = ["gsched-train", "train", "$tmp/s.toml", "--out_dir=$tmp/gsched"]
stdout = "$tmp/gsched.out"
EOF2
t0=$EPOCHREALTIME
id=$("$bin/gsched" submit --parsable "$tmp/job.toml")
"$bin/gsched" wait "$id" > /dev/null 2>&1 || { tail "$tmp/gsched.out"; exit 1; }
report "gsched launcher = mpi" "$tmp/gsched" "$(since "$t0")"
read -r d_step d_wall < "$tmp/direct/step"
read -r g_step g_wall < "$tmp/gsched/step"
python3 -c "print('gsched / mpirun: ms/step %.2f, wall %.2f (%+.1f s)' % ($g_step / $d_step, $g_wall / $d_wall, $g_wall - $d_wall))"
