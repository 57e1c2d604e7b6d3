#!/usr/bin/env bash
# sbcast.sh [BUILD_DIR] [MIB] [ROUNDS]: how long sbcast takes to put a file of MIB MiB
# (default 256) on every node of a job, on a local cluster of two workers, against the
# baselines measured in the same job: an srun step of one task per node that copies it with
# cp (what a script does without sbcast, each node reading the source itself), and the same
# with the copy synced to disk after (sbcast syncs each node's copy before renaming it into
# place). ROUNDS (default 5) of each, alternated; prints each way's median wall time, its rate (MiB/s of
# file per node) and the ratio of the medians. The workers share this machine, so both ways
# read and write the same disk (its page cache, for a file that fits) and sbcast's TCP runs
# on loopback: the figures say what sbcast's own path costs, not what it saves a real
# cluster's shared filesystem.
set -euo pipefail
bench_name="sbcast bench"
. "$(dirname "$0")/local_job.sh"
file_bench_args "$@"
local_cluster srun sbatch sbcast
head -c $((mib << 20)) /dev/urandom > src.bin
cat > run.sh <<EOF
#!/bin/bash
cd $tmp
ms() { date +%s%3N; }
for i in \$(seq $rounds); do
  t=\$(ms); sbcast -f src.bin dest.sbcast || echo "sbcast failed" >> fail.log
  echo "sbcast \$((\$(ms) - t))" >> times
  t=\$(ms); srun --overlap --ntasks-per-node=1 sh -c 'cp src.bin dest.cp.\$SLURMD_NODENAME' ||
    echo "cp failed" >> fail.log
  echo "cp \$((\$(ms) - t))" >> times
  t=\$(ms); srun --overlap --ntasks-per-node=1 sh -c 'cp src.bin dest.sync.\$SLURMD_NODENAME && sync dest.sync.\$SLURMD_NODENAME' ||
    echo "cp+sync failed" >> fail.log
  echo "sync \$((\$(ms) - t))" >> times
  cmp -s src.bin dest.sbcast || echo "sbcast copy differs" >> fail.log
  rm -f dest.sbcast dest.cp.* dest.sync.*
done
EOF
run_job -N2
echo "sbcast: $mib MiB to 2 workers, $rounds rounds each, $(nproc) cores"
sm=$(quantile sbcast 0.5) cm=$(quantile cp 0.5) ym=$(quantile sync 0.5)
awk -v m="$mib" -v s="$sm" -v c="$cm" -v y="$ym" 'BEGIN {
  printf "sbcast:          median %d ms, %.0f MiB/s per node\n", s, m * 1000 / s
  printf "srun cp:         median %d ms, %.0f MiB/s per node\n", c, m * 1000 / c
  printf "srun cp + sync:  median %d ms, %.0f MiB/s per node\n", y, m * 1000 / y
  printf "ratio (sbcast / srun cp): %.2fx; (sbcast / srun cp + sync): %.2fx\n", s / c, s / y }'
