#!/bin/sh
# install-slurm-links.sh [DIR]: links sbatch, srun, salloc, squeue, scancel, sinfo, scontrol, sacct,
# sstat, seff, sprio, sshare, sreport, sdiag and sbcast to gsched in DIR (default /usr/local/lib/gsched/slurm-bin),
# so that Slurm job scripts and habits work unchanged (gsched answers to those names; docs/slurm.md).
# Never run by the install itself: on a machine that also has Slurm the links would shadow
# it. Put DIR on PATH (first) only where gsched is the scheduler. Refuses to replace a file
# that is not already a link to gsched.
set -eu
dir=${1:-/usr/local/lib/gsched/slurm-bin}
gsched=$(command -v gsched || true)
[ -n "$gsched" ] || { echo "install-slurm-links.sh: gsched is not on PATH" >&2; exit 1; }
mkdir -p "$dir"
for cmd in sbatch srun salloc squeue scancel sinfo scontrol sacct sstat seff sprio sshare sreport sdiag sbcast; do
  target=$dir/$cmd
  if [ -e "$target" ] || [ -L "$target" ]; then
    if [ "$(readlink -f "$target")" != "$(readlink -f "$gsched")" ]; then
      echo "install-slurm-links.sh: $target exists and is not gsched; left alone" >&2
      continue
    fi
    rm -f "$target"
  fi
  ln -s "$gsched" "$target"
done
echo "Slurm command links to $gsched are in $dir; put it first on PATH to use them."
