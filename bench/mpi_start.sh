#!/usr/bin/env bash
# mpi_start.sh [BUILD_DIR] [ROUNDS] [pmix|pmi2]: how long an MPI program takes to start, run
# one MPI_Allreduce and end, on a local cluster of two workers (4 ranks, 2 per node),
# launched by srun alone against the baseline measured in the same job: the MPI library's
# own launcher. pmix (the default): Open MPI's program by `srun --mpi=pmix` (the workers'
# PMIx servers, gschedd joining the fences) against Open MPI's mpirun (gsched mpirun: its
# daemons started by srun, one per node, as under Slurm). pmi2: MPICH's program by
# `srun --mpi=pmi2` (the workers' PMI-1 servers) against MPICH's mpiexec (Hydra, which
# starts its proxies with srun, as under Slurm). ROUNDS (default 10) of each, alternated so
# that a noisy machine slows both alike; prints each launcher's median and p90 wall time
# and the ratio of the medians. Open MPI's ranks talk TCP on loopback (the two workers share
# this machine; see tests/integration/pmix.sh).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-10}
kind=${3:-pmix}
bin="$build/bin"
case $kind in
pmix)
  mpicc=$(command -v mpicc) || { echo "mpi_start: no mpicc (libopenmpi-dev)" >&2; exit 1; }
  peer="$bin/gsched mpirun" peer_name="gsched mpirun" ;;
pmi2)
  mpicc=$(command -v mpicc.mpich) || { echo "mpi_start: no mpicc.mpich (mpich)" >&2; exit 1; }
  peer="mpiexec.mpich -n 4" peer_name="mpiexec.mpich" ;;
*) echo "mpi_start: KIND is pmix or pmi2, not $kind" >&2; exit 2 ;;
esac
bench_name=mpi_start
. "$(dirname "$0")/local_job.sh"
local_cluster srun sbatch
cat > ring.c <<'EOF'
#include <mpi.h>
int main(int argc, char **argv)
{
    int rank, sum = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return sum == 6 ? 0 : 1;
}
EOF
"$mpicc" -O2 -o ring ring.c
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cat > run.sh <<EOF
#!/bin/bash
cd $tmp
ms() { date +%s%3N; }
for i in \$(seq $rounds); do
  t=\$(ms); srun --mpi=$kind ./ring || echo "$kind failed" >> fail.log; echo "srun \$((\$(ms) - t))" >> times
  t=\$(ms); $peer ./ring >/dev/null 2>>peer.err || echo "$peer_name failed" >> fail.log
  echo "peer \$((\$(ms) - t))" >> times
done
EOF
EXTRA_LOGS=peer.err run_job -N2 --ntasks-per-node=2
echo "mpi_start: $kind, 4 ranks on 2 workers, $rounds rounds each, $(nproc) cores"
sm=$(quantile srun 0.5) pm=$(quantile peer 0.5)
printf '%-16s median %s ms, p90 %s ms\n' "srun --mpi=$kind:" "$sm" "$(quantile srun 0.9)"
printf '%-16s median %s ms, p90 %s ms\n' "$peer_name:" "$pm" "$(quantile peer 0.9)"
awk -v a="$pm" -v b="$sm" -v n="$peer_name" -v k="$kind" \
  'BEGIN { printf "ratio (%s / srun --mpi=%s): %.2fx\n", n, k, a / b }'
