#!/usr/bin/env python3
"""train.py: the "training script" of the sbatch corpus. Prints its arguments and where it
runs, one line, for run.sh to check; trains nothing."""
import os
import sys

env = os.environ
print("TRAIN host=%s procid=%s localid=%s step=%s gpus=%s args=%s" % (
    env.get("SLURMD_NODENAME", "?"), env.get("SLURM_PROCID", "?"), env.get("SLURM_LOCALID", "?"),
    env.get("SLURM_STEP_ID", "?"), env.get("CUDA_VISIBLE_DEVICES", ""), " ".join(sys.argv[1:])),
    flush=True)
