#!/usr/bin/env bash
# cgroups.sh BIN_DIR SRC_DIR: each job in its own cgroup (worker/cgroup.h), on a `gsched up`
# cluster of one worker. Where the worker has cgroups (root, v1 or v2 memory and pids): a
# process a job leaves behind with `setsid` is killed when the job ends, and when it is
# cancelled; a job whose processes use more than its mem_per_node is killed by the kernel
# (its process ends by SIGKILL, and the job as OUT_OF_MEMORY); an srun step's leftovers are
# killed when the step ends, the job going on; on v1, a job opens only its
# own GPUs' /dev/nvidiaN (stand-in device nodes); the job's group has its
# memory and pids limits while it runs and is gone after; on v1 its cpusets do not balance
# load (the top cpuset does, for the whole machine), and its step groups are in the
# freezer's hierarchy alone (the memory one's without a freezer). Without cgroups the worker says
# so at start and the script checks only that.
name="cgroups"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --heartbeat 1s --kill-grace 1s
log=$state/node1.log
if grep -q 'cgroups=none' "$log"; then
  grep -q 'jobs run without kernel limits' "$log" || fail "no word on running without cgroups"
  echo "$name: no cgroups here ($(grep -o 'reason="[^"]*"' "$log")): containment not checked"
  echo "$name: ok"
  exit 0
fi
grep -Eq 'cgroups="v[12] \(memory,pids' "$log" || fail "no cgroups line in $log"
parent=$(sed -n 's/^cgroup_parent = "\(.*\)"$/\1/p' "$state/gsched.toml")
[ -n "$parent" ] || fail "no cgroup_parent in gsched.toml"
if grep -q 'cgroups="v1' "$log"; then
  group() { echo "/sys/fs/cgroup/$2/$parent/node1/job_$1"; } # group JOB CONTROLLER
  mem_limit=memory.limit_in_bytes
  steps=memory
  grep -q 'cgroups="v1 ([^"]*freezer' "$log" && steps=freezer
else
  group() { echo "/sys/fs/cgroup/$parent/node1/job_$1"; }
  mem_limit=memory.max
  steps=
fi
steps() { group "$1" "$steps"; } # steps JOB: the job's group that has the step groups

# --- a process left behind with setsid is killed when its job ends --------------------------
job_file left.toml "name = \"left\"
[resources]
nodes = 1
mem_per_node = \"256M\"
[run]
script = \"\"\"
setsid sleep 97 > /dev/null 2>&1 < /dev/null &
echo \$! > $work/left.pid
$(gate_wait left)
\"\"\""
id=$(submit left.toml)
wait_start "$id"
wait_for "the left-behind pid" 15 test -s "$work/left.pid"
pid=$(cat "$work/left.pid")
pid_alive "$pid" || fail "the setsid sleep is not running"
[ "$(cat "$(group "$id" memory)/$mem_limit")" = 268435456 ] ||
  fail "memory limit: $(cat "$(group "$id" memory)/$mem_limit")"
[ "$(cat "$(group "$id" pids)/pids.max")" = 32768 ] || fail "pids limit: $(cat "$(group "$id" pids)/pids.max")"
grep -qx "$pid" "$(steps "$id")/step_0/cgroup.procs" ||
  fail "the setsid sleep is not in the group of the job's step 0"
if [ -n "$steps" ]; then # v1: in the other hierarchies, in the job's group itself
  for c in memory pids cpuset devices; do
    [ "$c" = "$steps" ] || [ ! -d "$(group "$id" "$c")" ] && continue
    grep -qx "$pid" "$(group "$id" "$c")/cgroup.procs" || fail "the setsid sleep is not in the job's $c group"
    [ ! -e "$(group "$id" "$c")/step_0" ] || fail "a step group in the $c hierarchy"
  done
fi
# v1 cpusets of jobs do not balance load themselves where the top one balances the machine:
# no scheduling-domain rebuild at each job's start and end.
if grep -q 'cgroups="v1 ([^"]*cpuset' "$log" && [ "$(cat /sys/fs/cgroup/cpuset/cpuset.sched_load_balance)" = 1 ]; then
  g=$(group "$id" cpuset)
  [ "$(cat "$g/cpuset.sched_load_balance")" = 0 ] || fail "$g balances load"
  [ -n "$(cat "$g/cpuset.cpus")" ] || fail "$g has no CPUs"
fi
gate left
wait_end "$id"
[ "$(job_state "$id")" = COMPLETED ] || fail "job left: $(jq "$id" 'j')"
gone() { ! pid_alive "$pid"; }
wait_for "the left-behind sleep to be killed" 15 gone
wait_for "the job's group to go" 15 test ! -e "$(group "$id" pids)"
wait_for "the log line for the killed process" 15 \
  grep -q "job=$id processes=1 left in its cgroup after its tasks, killed" "$log"

# --- a step's leftovers are killed when the step ends, the job's other steps go on ----------
# A batch job whose srun step leaves a `setsid sleep` behind: once the step's task has ended
# (srun returned), its group job_ID/step_1 and the sleep are gone while the batch step's
# process still runs in job_ID/step_0. (The step waits for the sleep to be in its own session:
# before that, the end of the task's process group would take it.)
links=$tmp/bin
mkdir -p "$links"
ln -sf "$bin/gsched" "$links/srun"
cat > "$work/steps.sh" <<EOF
#!/bin/sh
#SBATCH -o $work/steps.out
PATH=$links:\$PATH srun -n1 sh -c 'setsid sleep 96 > /dev/null 2>&1 < /dev/null & p=\$!
  until [ "\$(cut -d" " -f6 /proc/\$p/stat)" = \$p ]; do sleep 0.01; done # its own session now
  echo \$p > $work/step.pid'
echo "srun=\$?" > $work/step.rc
$(gate_wait steps)
EOF
id=$("$bin/gsched" sbatch --parsable "$work/steps.sh") || fail "sbatch steps.sh"
wait_for "the step to end" 30 test -s "$work/step.rc"
grep -qx 'srun=0' "$work/step.rc" || fail "srun: $(cat "$work/step.rc" "$work/steps.out" 2>&1)"
pid=$(cat "$work/step.pid")
gone() { ! pid_alive "$pid"; }
wait_for "the step's leftover sleep to be killed" 15 gone
wait_for "the step's group to go" 15 test ! -e "$(steps "$id")/step_1"
[ -n "$(cat "$(steps "$id")/step_0/cgroup.procs")" ] || fail "the batch step's group is empty"
[ "$(job_state "$id")" = RUNNING ] || fail "the job ended with its step: $(jq "$id" 'j')"
# the group goes hierarchy by hierarchy before the worker logs what it killed
wait_for "the log line for the step's killed process" 15 \
  grep -q "job=$id step=1 processes=1 left in its cgroup after its tasks, killed" "$log"
gate steps
wait_end "$id"
[ "$(job_state "$id")" = COMPLETED ] || fail "job steps: $(jq "$id" 'j')"

# --- and when it is cancelled -------------------------------------------------------------
job_file cancelled.toml "name = \"cancelled\"
[resources]
nodes = 1
[run]
script = \"\"\"
setsid sh -c 'sleep 98' > /dev/null 2>&1 < /dev/null &
echo \$! > $work/cancelled.pid
$(gate_wait never)
\"\"\""
id=$(submit cancelled.toml)
wait_start "$id"
wait_for "the cancelled job's pid" 15 test -s "$work/cancelled.pid"
pid=$(cat "$work/cancelled.pid")
pid_alive "$pid" || fail "the cancelled job's setsid sh is not running"
"$bin/gsched" cancel "$id" >/dev/null || fail "cancel $id"
wait_end "$id"
wait_for "the cancelled job's setsid sh to be killed" 15 gone

# --- GPUs (v1 devices controller): only the job's own /dev/nvidiaN open --------------------
# Stand-in device nodes (no NVIDIA driver here): opening one the job was given fails with
# ENXIO (no such device), one it was not with EPERM from its cgroup.
if grep -q 'cgroups="v1 ([^"]*devices' "$log"; then
  for i in 0 1 2 3; do mknod "$work/nvidia$i" c 195 "$i" || fail "mknod"; done
  job_file gpus.toml "name = \"gpus\"
[resources]
nodes = 1
gpus_per_node = 1
[run]
script = \"\"\"
for i in 0 1 2 3; do
  if (exec 3< $work/nvidia\$i) 2>&1 | grep -q 'not permitted'; then echo \"\$i denied\"; else echo \"\$i open\"; fi
done > $work/gpus.txt
echo \"\$CUDA_VISIBLE_DEVICES\" > $work/gpus.mine
\"\"\""
  id=$(submit gpus.toml)
  wait_end "$id"
  mine=$(cat "$work/gpus.mine")
  for i in 0 1 2 3; do
    want=denied
    [ "$i" = "$mine" ] && want=open
    grep -qx "$i $want" "$work/gpus.txt" || fail "GPU $i should be $want (the job has $mine): $(cat "$work/gpus.txt")"
  done
fi

# --- more memory than mem_per_node: the kernel kills it --------------------------------------
job_file hog.toml "name = \"hog\"
[resources]
nodes = 1
mem_per_node = \"32M\"
[run]
script = \"\"\"
python3 -c 'b = bytearray(256 << 20); print(len(b))'
echo \"rc=\$?\" > $work/hog.rc
\"\"\""
id=$(submit hog.toml)
wait_end "$id" 60
grep -qx 'rc=137' "$work/hog.rc" || fail "the hog was not killed by SIGKILL: $(cat "$work/hog.rc" 2>&1)"
# The batch shell itself exited 0, but the job ran out of memory: OUT_OF_MEMORY, as Slurm.
[ "$(job_state "$id")" = OUT_OF_MEMORY ] || fail "the hog's job: $(jq "$id" 'j')"
expect "$id" 'j["reason"].startswith("out of memory on node1")' "the reason"
expect "$id" 't[0]["end_reason"] == "OUT_OF_MEMORY"' "the task's end reason"
"$bin/gsched" squeue -h -t OOM -j "$id" -o '%i %T' | grep -qx "$id OUT_OF_MEMORY" ||
  fail "squeue -t OOM: $("$bin/gsched" squeue -h -j "$id" -o '%i %T' 2>&1)"
echo "$name: ok"
