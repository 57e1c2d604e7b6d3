# shellcheck shell=bash disable=SC2034,SC2154
# lib.sh: sourced by the job-path integration scripts (jobs.sh, failures.sh). Each script
# sets `name`, then calls start_cluster: a `gsched up` local cluster in its own temporary
# directory, stopped and removed on exit whatever happens. Helpers poll with deadlines and
# read the CLI's --json output with python3; nothing here sleeps to synchronise.
#
# Layout:  $tmp/state   the cluster (gsched up --state), daemons' logs in state/*.log
#          $tmp/work    where jobs are submitted from, so their workdir and output files
#          $tmp/gates   files the jobs' scripts wait for (gate NAME releases them)
# Job scripts wait for gates with a bounded loop (gate_wait), so a task orphaned by a killed
# worker ends by itself even if nobody opens its gate; cleanup kills the ones still alive.
set -u
bin=$(cd "$1" && pwd) || exit 1
src=$(cd "$2" && pwd) || exit 1
tmp=$(mktemp -d)
state=$tmp/state
work=$tmp/work
gates=$tmp/gates
extra_pids=() # daemons a script starts itself (a restarted gschedd)
# The interpreter itself, not a version manager's shim in front of it: a test runs it a
# few hundred times.
py=$(python3 -c 'import sys; print(sys.executable)') || exit 1
python3() { "$py" "$@"; }
unset GSCHED_SOCKET
export GSCHED_SOCKET=$state/gschedd.sock
# The cluster is this machine's loopback (unless its nodes are network namespaces, below):
# Open MPI's ranks and daemons (gsched mpirun) talk over it only, not over the bridges the
# netns tests make and remove while this one runs.
if [ "${GSCHED_TEST_NETNS:-0}" != 1 ]; then
  export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
fi

cleanup() {
  if [ -f "$state/gschedd.pid" ] || ls "$state"/node*.pid >/dev/null 2>&1 || [ -f "$state/netns" ]; then
    "$bin/gsched" down --state "$state" >/dev/null 2>&1
  fi
  local p f
  for p in "${extra_pids[@]}"; do kill_if "$p" gschedd; done
  for f in "$state"/*.pid; do # whatever `down` could not stop
    [ -f "$f" ] && kill_if "$(cat "$f")" gschedd gsched-workerd
  done
  if [ -f "$tmp/tasks.pids" ]; then
    while read -r p; do kill_if "$p" sh; done < "$tmp/tasks.pids"
  fi
  # Any process of this cluster still running: above all the keeper of a worker the test
  # SIGKILLed (a fork with the worker's command line, which ignores SIGTERM and lives on
  # for 4/5 of the fence timeout to end that worker's tasks). Its command line names this
  # state directory.
  pkill -KILL -f -- "--config $state/gsched.toml" 2>/dev/null
  cgroups_cleanup
  rm -rf "$tmp"
}

# The cluster's cgroups (its worker.cgroup_parent, in every hierarchy), where empty: a
# worker killed with SIGKILL leaves its node's group, and on a long-lived machine hundreds
# of stale cpusets slow every job's cgroup changes (bench/RESULTS.md). Only this cluster's.
cgroups_cleanup() {
  local parent d
  [ -f "$state/gsched.toml" ] || return 0
  parent=$(sed -n 's/^cgroup_parent = "\(gsched-up\/[0-9a-f]*\)"$/\1/p' "$state/gsched.toml")
  [ -n "$parent" ] || return 0
  for d in /sys/fs/cgroup/*/"$parent" /sys/fs/cgroup/"$parent"; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}
trap cleanup EXIT

# kill_if PID PROGRAM...: kill -9 PID if it is still one of the programs (pids are reused).
# Tasks append their shell's pid to $tmp/tasks.pids (gate_wait), so that cleanup can end
# any a killed worker left behind.
kill_if() {
  local p=$1 comm
  shift
  comm=$(cat /proc/"$p"/comm 2>/dev/null) || return 0
  for prog in "$@"; do
    [ "$comm" = "$prog" ] && kill -9 "$p" 2>/dev/null
  done
  return 0
}

fail() {
  echo "$name: $*" >&2
  for f in "$state"/*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -25 "$f" >&2; }
  done
  exit 1
}

# wait_for DESCRIPTION SECONDS COMMAND...: retries COMMAND until it succeeds or SECONDS pass.
wait_for() {
  local what=$1 secs=$2 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out after $secs s waiting for $what"
    sleep 0.05
  done
}

# With GSCHED_TEST_NETNS=1 (the netns_cluster_* tests, tests/netns/CMakeLists.txt) the
# cluster is `gsched up --netns`: each node in its own network namespace with its own
# address and host name. Where that cannot be (not root, no `ip netns`) the script prints
# "[SKIP] netns::NAME: why" and exits 77, which ctest counts as skipped.
start_cluster() { # start_cluster UP-OPTIONS...
  mkdir -p "$work" "$gates" || exit 1
  cd "$work" || exit 1
  local out up=(up --state "$state")
  if [ "${GSCHED_TEST_NETNS:-0}" = 1 ]; then
    [ "$(id -u)" = 0 ] || skip "not root: network namespaces, bridges and veths need CAP_NET_ADMIN"
    out=$(ip netns list 2>&1) || skip "ip netns is not available: $out"
    up+=(--netns)
  fi
  out=$("$bin/gsched" "${up[@]}" "$@" 2>&1) || fail "gsched up failed: $out"
}

skip() {
  echo "[SKIP] netns::$name: $*"
  exit 77
}

# respawn NODE COMMAND...: starts a killed daemon of NODE again from its command line, in
# a session of its own, as `gsched up` started it: on a --netns cluster in that node's
# network namespace, with a UTS namespace of its own named NODE and a mount namespace that
# sees the cluster's hosts file as /etc/hosts. Run it in the background (respawn ... &):
# the subshell and each program exec the next, so $! is the daemon's pid.
respawn() {
  local node=$1 tag
  shift
  if [ "${GSCHED_TEST_NETNS:-0}" = 1 ] && [ -f "$state/netns" ]; then
    tag=$(awk '$1 == "tag" { print $2 }' "$state/netns")
    exec setsid nsenter --net="/run/netns/gsched-$tag-$node" unshare --uts --mount --propagation slave \
      sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"' \
      sh "$node" "$state/hosts" "$@"
  else
    exec setsid "$@"
  fi
}

# node_addr NODE: the address a node's tasks have (MASTER_ADDR when it is the first):
# 127.0.0.1 on a plain local cluster, its own with --netns (the cluster's hosts file).
node_addr() {
  if [ -f "$state/hosts" ] && [ "${GSCHED_TEST_NETNS:-0}" = 1 ]; then
    awk -v n="$1" '$2 == n { print $1 }' "$state/hosts"
  else
    echo 127.0.0.1
  fi
}

stop_cluster() {
  local out
  out=$("$bin/gsched" down --state "$state" 2>&1) || fail "gsched down failed: $out"
}

# Under the sanitizer build the daemons report into their logs: those count too.
check_logs() {
  if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$state"/*.log; then
    fail "sanitizer report in a daemon's log"
  fi
}

gate() { touch "$gates/$1"; }

# slurm_names CMD...: puts links named CMD (sbatch, srun, ...) to gsched first on PATH, so
# that scripts and jobs run Slurm's names as users do.
slurm_names() {
  mkdir -p "$tmp/bin"
  for cmd in "$@"; do ln -s "$bin/gsched" "$tmp/bin/$cmd"; done
  export PATH=$tmp/bin:$PATH
}

# A shell fragment for job scripts: records the task's pid, then waits for gate NAME
# (at most 30 s, so that no task outlives the test by long).
gate_wait() {
  printf 'echo $$ >> %s/tasks.pids\ni=0\nwhile [ ! -e %s/%s ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n' \
    "$tmp" "$gates" "$1"
}

# sbatch_id OPTIONS...: `gsched sbatch --parsable -o /dev/null OPTIONS...`, printing the job
# id (fails the test when refused). Not named sbatch: scripts run Slurm's name through links.
sbatch_id() {
  local out
  out=$("$bin/gsched" sbatch --parsable -o /dev/null "$@" 2>&1) || fail "sbatch $*: $out"
  echo "${out%%;*}"
}

# job_file FILE TOML-TEXT: writes a job file into $work.
job_file() { printf '%s\n' "$2" > "$work/$1"; }

# submit FILE [OPTIONS...]: submits, prints the job id; fails the test when refused.
submit() {
  local out
  out=$("$bin/gsched" submit "$@" --json 2>&1) || fail "submit $* refused: $out"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["job_id"])' "$out" ||
    fail "submit $*: unexpected output: $out"
}

# jq JOB EXPR: evaluates a Python expression over `gsched show JOB --json`, with the
# reply's job as j, its history as h and its task exits as t; prints the result.
jq() {
  local out
  out=$("$bin/gsched" show "$1" --json 2>&1) || fail "show $1 failed: $out"
  python3 -c '
import json, sys
d = json.loads(sys.argv[1]); j = d["job"]; h = d["history"]; t = d["task_exits"]
r = eval("(" + sys.argv[2] + ")")
print(json.dumps(r) if isinstance(r, (list, dict)) else r)' "$out" "$2" || fail "jq $1 '$2' on: $out"
}

# is JOB EXPR: true when the Python expression over the job holds (quiet; for wait_for).
is() { [ "$(jq "$1" "$2" 2>/dev/null)" = True ]; }

# expect JOB EXPR [WHAT]: fails the test unless EXPR holds now.
expect() { is "$1" "$2" || fail "job $1: expected ${3:-$2}; the job: $(jq "$1" 'j')"; }

job_state() { jq "$1" 'j["state"]'; }
job_reason() { jq "$1" 'j["reason"]'; }

# queue_count: how many jobs gschedd knows, finished ones included.
queue_count() {
  "$bin/gsched" queue --all --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'
}

# wait_end JOB [SECONDS]: waits for the job to end (gsched wait, deadline 20 s by default);
# prints nothing, returns the job's exit status as gsched wait does.
wait_end() {
  "$bin/gsched" wait "$1" --timeout "${2:-20}s" >/dev/null 2>&1
  local rc=$?
  is "$1" 'j["state"] not in ("PENDING", "RUNNING", "REQUEUED")' ||
    fail "job $1 did not end in ${2:-20} s: $(jq "$1" 'j')"
  return $rc
}

wait_start() {
  "$bin/gsched" wait "$1" --start --timeout "${2:-20}s" >/dev/null 2>&1 ||
    fail "job $1 did not start in ${2:-20} s: $(jq "$1" 'j')"
}

# pid_alive PID: the process exists and is not a zombie.
pid_alive() {
  kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null)" != Z ]
}

# restart_sched WORKERS: gschedd stopped (TERM) and started again by `up` from
# state/gsched.toml (as the test may have extended it), its WORKERS workers left running.
restart_sched() {
  local sched out
  sched=$(cat "$state/gschedd.pid")
  kill -TERM "$sched"
  wait_for "gschedd (pid $sched) to stop" 10 eval "! pid_alive $sched"
  out=$("$bin/gsched" up --state "$state" --workers "$1" 2>&1) || fail "up after gschedd stopped: $out"
}

# train_data DIR: a small gsched-train dataset in DIR, from the licence texts.
train_data() {
  "$bin/gsched" shard build --out "$1" --val-fraction 0.05 /usr/share/common-licenses/* \
    > "$tmp/shard-build.log" 2>&1 || fail "shard build: $(cat "$tmp/shard-build.log")"
}

# train_cfg FILE DATA_DIR STEPS: a small GPT (2 layers, 64 channels, one thread) trained for
# STEPS steps, a checkpoint every 20; the caller appends more sections.
train_cfg() {
  printf '%s\n' "threads = 1" "[model]" "layers = 2" "heads = 2" "channels = 64" \
    "context = 64" "[data]" "dir = \"$2\"" "[batch]" "global_tokens = 1024" "micro = 8" \
    "[optim]" "lr = 3e-3" "warmup_steps = 2" "steps = $3" "[checkpoint]" "every = 20" \
    "keep = 20" "[metrics]" "log_every = 50" > "$1"
}
