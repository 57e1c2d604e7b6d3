#!/bin/sh
#SBATCH --job-name="bert large"
#SBATCH --comment "nightly run, do not kill"
#SBATCH --output="out dir/%x.%j.log"
#SBATCH --open-mode=append
#SBATCH --ntasks=3 --cpus-per-task=1   # several options on one line, and a comment

# Quoted values with spaces, and srun's tasks spread over one node.
echo "NAME=$SLURM_JOB_NAME NTASKS=$SLURM_NTASKS ARGS=$*"
srun python3 train.py --tag "$1"
