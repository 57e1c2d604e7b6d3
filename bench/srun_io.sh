#!/usr/bin/env bash
# srun_io.sh [BUILD_DIR] [MIB] [ROUNDS]: how fast srun's stdin reaches a step's tasks and
# their output reaches srun's, on a local cluster of two workers, inside a batch job (srun
# talking through its worker's relay, as job scripts do). Each round pipes a file of MIB MiB
# (default 256) into `srun md5sum`, one task on one node, then broadcast (Slurm's default -i
# all) to one task on each of the two nodes, and has one task `cat` it into srun's
# `| md5sum`; against the baseline measured in the same job: the same steps with each task
# reading the file itself (`srun md5sum FILE`). ROUNDS (default 5) of each, alternated;
# prints each way's median wall time, its rate, and the ratio of the medians. Input goes
# srun -> worker relay -> gschedd -> each task's worker -> its pipe, at most 896 KiB ahead of
# what the slowest task took (StepInputAck); output back the same way, each worker at most
# its window (4 MiB for one node) ahead of what srun wrote (StepOutputAck).
set -euo pipefail
bench_name="srun io bench"
. "$(dirname "$0")/local_job.sh"
file_bench_args "$@"
local_cluster srun sbatch
head -c $((mib << 20)) /dev/urandom > src.bin
want=$(md5sum < src.bin | cut -d' ' -f1)
cat > run.sh <<EOF2
#!/bin/bash
cd $tmp
ms() { date +%s%3N; }
check() { [ "\$(cut -d' ' -f1 "\$1" | sort -u)" = "$want" ] || echo "\$2: wrong sum: \$(cat "\$1")" >> fail.log; }
for i in \$(seq $rounds); do
  t=\$(ms); srun -N1 -n1 md5sum < src.bin > one.sum || echo "stdin one failed" >> fail.log
  echo "in1 \$((\$(ms) - t))" >> times; check one.sum "stdin to one task"
  t=\$(ms); srun -N1 -n1 md5sum src.bin > one.sum || echo "file one failed" >> fail.log
  echo "file1 \$((\$(ms) - t))" >> times; check one.sum "file, one task"
  t=\$(ms); srun -N2 --ntasks-per-node=1 md5sum < src.bin > two.sum || echo "stdin two failed" >> fail.log
  echo "in2 \$((\$(ms) - t))" >> times; check two.sum "stdin to two tasks"
  t=\$(ms); srun -N2 --ntasks-per-node=1 md5sum src.bin > two.sum || echo "file two failed" >> fail.log
  echo "file2 \$((\$(ms) - t))" >> times; check two.sum "file, two tasks"
  t=\$(ms); srun -N1 -n1 cat src.bin | md5sum > out.sum || echo "output failed" >> fail.log
  echo "out1 \$((\$(ms) - t))" >> times; check out.sum "output of one task"
done
EOF2
run_job -N2
echo "srun stdin and stdout: $mib MiB, $rounds rounds each, $(nproc) cores"
i1=$(quantile in1 0.5) f1=$(quantile file1 0.5) i2=$(quantile in2 0.5) f2=$(quantile file2 0.5)
o1=$(quantile out1 0.5)
awk -v m="$mib" -v i1="$i1" -v f1="$f1" -v i2="$i2" -v f2="$f2" -v o1="$o1" 'BEGIN {
  printf "1 task,  srun md5sum < FILE:  median %d ms, %.0f MiB/s\n", i1, m * 1000 / i1
  printf "1 task,  srun md5sum FILE:    median %d ms, %.0f MiB/s\n", f1, m * 1000 / f1
  printf "2 nodes, srun md5sum < FILE:  median %d ms, %.0f MiB/s to each task\n", i2, m * 1000 / i2
  printf "2 nodes, srun md5sum FILE:    median %d ms, %.0f MiB/s each\n", f2, m * 1000 / f2
  printf "1 task,  srun cat FILE | md5sum: median %d ms, %.0f MiB/s\n", o1, m * 1000 / o1
  printf "ratio (stdin / file): 1 task %.2fx, 2 nodes %.2fx; (stdout / file): %.2fx\n", i1 / f1, i2 / f2, o1 / f1 }'
