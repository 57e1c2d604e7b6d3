#!/usr/bin/env bash
# demo.sh BUILD_DIR: the main job of `make demo`. Starts a local cluster with `gsched up`
# (gschedd and two workers with 4 synthetic GPUs each) in a temporary directory, submits
# examples/hello.toml (2 nodes x 2 GPUs, one task per GPU), shows it queued and running,
# waits for it, prints each task's output and the job's history, shows that a job file with
# a mistake is refused, runs examples/hello-slurm.sh through sbatch, and stops the cluster.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
gsched="$build/bin/gsched"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-demo.XXXXXX")
cleanup() { "$gsched" down --state "$tmp/state" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp"
export GSCHED_SOCKET="$tmp/state/gschedd.sock"

"$gsched" --version
echo "--- gsched up --workers 2 --gpus-per-node 4"
"$gsched" up --workers 2 --gpus-per-node 4 --state "$tmp/state"
echo "--- gsched nodes"
"$gsched" nodes
echo "--- gsched submit examples/hello.toml"
cp "$here/hello.toml" .
id=$("$gsched" submit --parsable hello.toml)
echo "submitted job $id"
"$gsched" wait --start "$id" >/dev/null
echo "--- gsched queue"
"$gsched" queue
"$gsched" nodes
echo "--- gsched wait $id"
"$gsched" wait "$id"
echo "--- its output (gsched logs $id --task N)"
for rank in 0 1 2 3; do "$gsched" logs "$id" --task "$rank"; done
echo "--- gsched show $id"
"$gsched" show "$id"
echo "--- a job file with a mistake is refused, the problem at its place:"
printf 'name = "typo"\n[resources]\ngpu_per_node = 4\n[run]\ncommand = ["true"]\n' > typo.toml
"$gsched" submit typo.toml || true
echo "--- a Slurm batch script, unchanged: gsched sbatch examples/hello-slurm.sh"
links="$tmp/slurm-bin" # what deploy/install-slurm-links.sh makes, for this demo only
mkdir -p "$links"
for cmd in srun scontrol; do ln -s "$gsched" "$links/$cmd"; done
cp "$here/hello-slurm.sh" .
sid=$(PATH="$links:$PATH" "$gsched" sbatch --parsable hello-slurm.sh)
"$gsched" wait "$sid" >/dev/null
cat "hello-slurm-$sid.out"
"$gsched" sacct -j "$sid"
echo "--- gsched queue --all"
"$gsched" queue --all
echo "--- gsched down"
"$gsched" down --state "$tmp/state"
echo "demo: done"
