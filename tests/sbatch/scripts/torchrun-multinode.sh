#!/bin/bash
#SBATCH --job-name=llama-ft
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=4
#SBATCH --time=00:30:00
#SBATCH --output=%x-%j.out
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=ml-team@example.com

# Multi-node torchrun, the way most fine-tuning repos ship it: one srun task per node, the
# first node of the allocation as the rendezvous endpoint.
set -euo pipefail

nodes=( $(scontrol show hostnames "$SLURM_JOB_NODELIST") )
head_node=${nodes[0]}
echo "NODES=${nodes[*]} HEAD=$head_node NNODES=$SLURM_NNODES NTASKS=$SLURM_NTASKS"
echo "JOB=$SLURM_JOB_ID NAME=$SLURM_JOB_NAME TPN=$SLURM_TASKS_PER_NODE CPT=$SLURM_CPUS_PER_TASK"
echo "BATCH_HOST=$SLURMD_NODENAME GPUS_ON_NODE=$SLURM_GPUS_ON_NODE SUBMIT_DIR=$SLURM_SUBMIT_DIR"

export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK
srun torchrun \
    --nnodes "$SLURM_NNODES" \
    --nproc_per_node 4 \
    --rdzv_id "$SLURM_JOB_ID" \
    --rdzv_backend c10d \
    --rdzv_endpoint "$head_node:29500" \
    train.py --config configs/llama-7b.yaml
echo "DONE"
