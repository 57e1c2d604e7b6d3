#!/bin/bash
# A sweep whose parameters come on stdin (--input), accounted under a WCKey, on a node
# with local scratch (--tmp) and at least two cores (--mincpus).
#SBATCH --job-name=params
#SBATCH --input=params.txt
#SBATCH --output=params-%j.out
#SBATCH --wckey=sweeps
#SBATCH --mincpus=2
#SBATCH --tmp=1M
while read -r lr wd; do
  echo "RUN lr=$lr wd=$wd"
done
echo "CPN=$SLURM_JOB_CPUS_PER_NODE"
