#!/bin/bash
# Fine-tune on one GPU.
#SBATCH --job-name=late
#SBATCH --gres=gpu:1

#SBATCH --time=10:00
echo "NNODES=$SLURM_NNODES"
#SBATCH --nodes=2
echo "GPUS_ON_NODE=$SLURM_GPUS_ON_NODE"
