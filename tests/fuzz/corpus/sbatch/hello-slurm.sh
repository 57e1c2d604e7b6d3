#!/bin/bash
#SBATCH --job-name=hello-slurm
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-node=2
#SBATCH --time=00:05:00
#SBATCH --output=%x-%j.out

# A Slurm batch script as it would run on a Slurm cluster: the batch step on the first
# node finds its nodes with scontrol, then srun starts one task per GPU on both nodes.
# `gsched sbatch examples/hello-slurm.sh` runs it unchanged.
nodes=( $(scontrol show hostnames "$SLURM_JOB_NODELIST") )
echo "job $SLURM_JOB_ID on ${nodes[*]} ($SLURM_NTASKS tasks, $SLURM_TASKS_PER_NODE per node)"
srun bash -c 'echo "task $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME (local $SLURM_LOCALID, GPUs $CUDA_VISIBLE_DEVICES)"'
