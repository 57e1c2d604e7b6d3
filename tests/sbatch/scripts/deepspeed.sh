#!/bin/bash
#SBATCH -N 2 -n 2
#SBATCH -G 4
#SBATCH -t 0-00:20
#SBATCH -o ds-%j.out

# DeepSpeed's own launcher: a hostfile with one line per node, run from the batch step.
hostfile=hostfile.$SLURM_JOB_ID
for h in $(scontrol show hostnames); do
    echo "$h slots=$SLURM_GPUS_PER_NODE"
done > "$hostfile"
cat "$hostfile"
deepspeed --hostfile "$hostfile" --num_nodes "$SLURM_JOB_NUM_NODES" train.py --deepspeed ds_config.json
