#!/usr/bin/env bash
#SBATCH --job-name accel
#SBATCH -N 2
#SBATCH --gpus-per-node=2
#SBATCH --ntasks-per-node 1
#SBATCH -c 2
#SBATCH --mem=1G
#SBATCH --partition=gpu
#SBATCH --account=nlp --qos=high
#SBATCH --output accel.out

# Hugging Face accelerate across nodes: srun starts one launcher per node, each told its
# machine rank from SLURM_NODEID.
export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
export MASTER_PORT=29501
echo "PARTITION=$SLURM_JOB_PARTITION ACCOUNT=$SLURM_JOB_ACCOUNT QOS=$SLURM_JOB_QOS GPN=$SLURM_GPUS_PER_NODE"
srun bash -c 'accelerate launch --num_machines $SLURM_NNODES --num_processes $((SLURM_NNODES * 2)) --machine_rank $SLURM_NODEID --main_process_ip $MASTER_ADDR --main_process_port $MASTER_PORT train.py --mixed_precision bf16'
