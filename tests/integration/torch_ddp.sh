#!/usr/bin/env bash
# torch_ddp.sh BIN_DIR SRC_DIR: a real PyTorch DDP client (torch_ddp.py, gloo backend, Debian's
# python3-torch) on a 2-node `gsched up --netns` cluster, where each node has its own host
# name and address as on a real one (issue 20). Both ways users launch it:
#   - a job file with tasks_per_node = 2: gsched's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR
#     and MASTER_PORT;
#   - an sbatch script in the most common Slurm pattern: the first node from `scontrol show
#     hostnames $SLURM_JOB_NODELIST`, its address from `getent hosts` as MASTER_ADDR, then
#     `srun python3 torch_ddp.py --slurm`, which maps SLURM_PROCID / SLURM_NTASKS itself.
#   - launcher = "torchrun" with tasks_per_node = "per-gpu" (2 GPUs a node): gsched starts
#     one torchrun per node (--nnodes 2 --nproc_per_node 2 --node_rank R, a static
#     rendezvous on node1) and the script runs unchanged under it. Debian 12's torchrun
#     (torch 1.13) fails on Python 3.11 with its default --redirects 0 before it launches
#     anything; the job's environment sets torchrun's own PET_REDIRECTS=1 / PET_TEE=1
#     (stdout to its log files and, prefixed "[default0]:", to the agent's output).
# Each run: 4 ranks, 2 on each node, all say ok (their weights equal the single-process
# reference and each other's), MASTER_ADDR is node1's address, the job ends COMPLETED.
# Root only (namespaces), else skipped; skipped too where python3 cannot import torch.
name="integration_torch_ddp"
. "$(dirname "$0")/lib.sh"
export GSCHED_TEST_NETNS=1

torch_py=""
for c in /usr/bin/python3 "$py"; do
  if "$c" -c 'import torch.distributed' 2> /dev/null; then
    torch_py=$c
    break
  fi
done
[ -n "$torch_py" ] || skip "python3 cannot import torch (Debian: python3-torch, from deploy/install-deps.sh)"
export OMP_NUM_THREADS=1 # four ranks on a machine of two cores

start_cluster --workers 2 --gpus-per-node 2
cp "$src/tests/integration/torch_ddp.py" "$work/" || fail "cannot copy torch_ddp.py"
master=$(node_addr node1)
[ -n "$master" ] && [ "$master" != 127.0.0.1 ] || fail "node1 has no address of its own: '$master'"

# check_run OUT_FILE: four ok lines, ranks 0..3, two per node, all with node1 as master.
check_run() {
  python3 - "$1" "$master" << 'PY' || fail "$1: $(cat "$1")"
import collections, sys
path, master = sys.argv[1], sys.argv[2]
lines = [line.split("]:", 1)[-1] if line.startswith("[default") else line for line in open(path)]
ok = [dict(f.split("=", 1) for f in line.split()[1:]) for line in lines if line.startswith("ok ")]
assert sorted(int(o["rank"]) for o in ok) == [0, 1, 2, 3], f"ranks {ok}"
assert all(o["world"] == "4" and o["master"] == master for o in ok), f"world/master {ok}"
hosts = collections.Counter(o["host"] for o in ok)
assert hosts == {"node1": 2, "node2": 2}, f"hosts {hosts}"
assert sorted((o["host"], o["local"]) for o in ok) == [
    ("node1", "0"), ("node1", "1"), ("node2", "0"), ("node2", "1")], f"local ranks {ok}"
PY
}

# --- a job file with tasks_per_node ---------------------------------------------------------
job_file ddp.toml "name = \"torch-ddp\"
[resources]
nodes = 2
cpus_per_task = 1
[run]
tasks_per_node = 2
command = [\"$torch_py\", \"torch_ddp.py\"]
stdout = \"ddp-%t.out\""
j=$(submit ddp.toml)
wait_end "$j" 120 || fail "the job file's run failed: $(jq "$j" 'j'); $(cat "$work"/ddp-*.out)"
expect "$j" 'j["state"] == "COMPLETED"'
cat "$work"/ddp-*.out > "$work/ddp.all"
check_run "$work/ddp.all"

# --- an sbatch script, the Slurm way ------------------------------------------------------
cat > "$work/ddp.sbatch" << EOF
#!/bin/bash
#SBATCH --job-name=torch-ddp-slurm
#SBATCH --nodes=2 --ntasks-per-node=2
#SBATCH --output=slurm-%j.out
nodes=( \$(scontrol show hostnames "\$SLURM_JOB_NODELIST") )
export MASTER_ADDR=\$(getent hosts "\${nodes[0]}" | awk '{ print \$1 }')
export MASTER_PORT=29500
echo "batch on \$(hostname): nodes \${nodes[*]} master \$MASTER_ADDR"
srun $torch_py torch_ddp.py --slurm
EOF
out=$("$bin/gsched" sbatch --parsable "$work/ddp.sbatch" 2>&1) || fail "sbatch refused: $out"
s=${out%%;*}
wait_end "$s" 120 || fail "the sbatch run failed: $(jq "$s" 'j'); $(cat "$work/slurm-$s.out")"
expect "$s" 'j["state"] == "COMPLETED"'
grep -qx "batch on node1: nodes node1 node2 master $master" "$work/slurm-$s.out" ||
  fail "the batch script's view: $(head -3 "$work/slurm-$s.out")"
check_run "$work/slurm-$s.out"

# --- launcher = "torchrun" ------------------------------------------------------------------
job_file tr.toml "name = \"torchrun\"
[resources]
nodes = 2
gpus_per_node = 2
[run]
launcher = \"torchrun\"
tasks_per_node = \"per-gpu\"
command = [\"torch_ddp.py\"]
stdout = \"tr-%t.out\"
env = { PET_REDIRECTS = \"1\", PET_TEE = \"1\", PET_LOG_DIR = \"$work/tr-logs\" }"
t=$(submit tr.toml)
wait_end "$t" 120 || fail "the torchrun job failed: $(jq "$t" 'j'); $(cat "$work"/tr-*.out)"
expect "$t" 'j["state"] == "COMPLETED" and len(t) == 2 and sorted(e["rank"] for e in t) == [0, 1]' \
  "two agents, ranks 0 and 1, COMPLETED"
"$bin/gsched" show "$t" | grep -q "Launcher=torchrun" || fail "show does not say Launcher=torchrun"
cat "$work"/tr-*.out > "$work/tr.all"
check_run "$work/tr.all"
job_file trs.toml '[run]
launcher = "torchrun"
script = "python3 train.py"'
out=$("$bin/gsched" submit trs.toml 2>&1) && fail "torchrun with a script submitted: $out"
case $out in *"runs run.command"*) ;; *) fail "torchrun with a script: $out" ;; esac

stop_cluster
check_logs
echo "$name: passed"
