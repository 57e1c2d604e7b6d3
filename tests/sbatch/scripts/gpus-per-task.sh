#!/bin/bash
#SBATCH -N 1
#SBATCH -n 4
#SBATCH --gpus-per-task=1
#SBATCH -o gpt-%j.out

# One GPU per task, as Megatron-style scripts ask: each srun task sees only its own.
srun python3 train.py --tensor-parallel 4
