#!/bin/bash
#SBATCH -J sweep
#SBATCH -a 0-5%2
#SBATCH -o logs/sweep_%A_%a.out
#SBATCH -e logs/sweep_%A_%a.err
#SBATCH -t 5
#SBATCH --gpus-per-node=1

# A learning-rate sweep: one array element per value, at most two at a time.
LRS=(1e-4 3e-4 1e-3 3e-3 1e-2 3e-2)
lr=${LRS[$SLURM_ARRAY_TASK_ID]}
echo "START $(date +%s.%N)" >> "logs/times.$SLURM_ARRAY_TASK_ID"
echo "TASK=$SLURM_ARRAY_TASK_ID ARRAY=$SLURM_ARRAY_JOB_ID JOB=$SLURM_JOB_ID COUNT=$SLURM_ARRAY_TASK_COUNT MIN=$SLURM_ARRAY_TASK_MIN MAX=$SLURM_ARRAY_TASK_MAX STEP=$SLURM_ARRAY_TASK_STEP LR=$lr"
python3 train.py --lr "$lr" --run-name "sweep-$SLURM_ARRAY_TASK_ID"
echo "to stderr" >&2
sleep 0.2
echo "END $(date +%s.%N)" >> "logs/times.$SLURM_ARRAY_TASK_ID"
