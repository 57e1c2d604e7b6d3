#!/bin/bash
#SBATCH -J ckpt
#SBATCH -t 1
#SBATCH --signal=B:USR1@55
#SBATCH --requeue
#SBATCH -o ckpt.out
#SBATCH --open-mode=append

# Checkpoint-and-requeue: the batch shell gets USR1 55 s before the 1-minute limit, saves,
# and requeues itself; the second run sees SLURM_RESTART_COUNT=1 and finishes.
echo "RUN restart=${SLURM_RESTART_COUNT}" >> ckpt.marks
if [ "${SLURM_RESTART_COUNT}" -ge 1 ]; then
    echo "RESUMED" >> ckpt.marks
    exit 0
fi
trap 'echo "USR1 checkpoint" >> ckpt.marks; scontrol requeue $SLURM_JOB_ID; exit 0' USR1
i=0
while [ $i -lt 600 ]; do sleep 0.1 & wait $!; i=$((i+1)); done
echo "NO SIGNAL" >> ckpt.marks
