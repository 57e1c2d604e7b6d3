# shellcheck shell=bash disable=SC2034,SC2154
# lib.sh: sourced by the multi-host tests (tests/netns/*.sh) and the chaos run
# (tests/chaos/chaos.sh). A cluster on one machine that is wired like several: gschedd and
# each worker in a network namespace of their own, each behind a veth pair on a Linux
# bridge in the root namespace, and each worker in a UTS namespace whose host name is its
# node name (the worker takes its name from it). A link is cut with `ip link set DEV down`
# on the bridge side of its veth (a pulled cable: no RST, no FIN, packets go nowhere) and
# mended with `up`. The CLI reaches gschedd through its Unix socket in $tmp (a path-based
# socket is the same file in every network namespace); workers reach it over TCP at
# $sched_ip:$sched_port.
#
# Set name= before sourcing; takes BIN_DIR SRC_DIR as the script's arguments. Not root, or
# no `ip netns`: prints "[SKIP] netns::NAME: why" (which tests/count-skips.sh counts) and
# exits 77, ctest's SKIP_RETURN_CODE for these tests. Every name (namespaces, links, the
# bridge) carries a tag made of this shell's pid and a random byte, so that runs side by
# side do not meet; on exit, whatever happens, everything started in the namespaces is
# killed (`ip netns pids`: only this run's processes are in them, so a helper process
# is started in one too) and the namespaces, links and bridge are removed. Helpers poll
# with deadlines, never a bare sleep.
set -u
bin=$(cd "$1" && pwd) || exit 1
src=$(cd "$2" && pwd) || exit 1
tmp=$(mktemp -d)
py=$(python3 -c 'import sys; print(sys.executable)') || exit 1
python3() { "$py" "$@"; }
export GSCHED_SOCKET=$tmp/gschedd.sock
sched_ip=10.77.0.1
sched_port=7700
netns_names=() # the namespaces made so far, removed by cleanup
netns_links=() # the bridge-side veth ends, ditto
netns_bridge=""

netns_cleanup() {
  local ns p
  for ns in "${netns_names[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  done
  for p in "${netns_links[@]}"; do ip link del "$p" 2>/dev/null; done
  [ -n "$netns_bridge" ] && ip link del "$netns_bridge" 2>/dev/null
  for ns in "${netns_names[@]}"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$tmp"
}
trap netns_cleanup EXIT

skip() {
  echo "[SKIP] netns::$name: $*"
  exit 77
}

fail() {
  echo "$name: $*" >&2
  local f
  for f in "$tmp"/*.log; do
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

# netns_usable: skips the test unless this shell may make namespaces, bridges and veths.
netns_usable() {
  [ "$(id -u)" = 0 ] || skip "not root: network namespaces, bridges and veths need CAP_NET_ADMIN"
  local c
  for c in ip nsenter unshare hostname; do
    command -v "$c" >/dev/null 2>&1 || skip "no $c command"
  done
  ip netns list >/dev/null 2>&1 || skip "ip netns is not available: $(ip netns list 2>&1 | head -1)"
}

# netns_up NODES: the namespaces, the bridge and a link for gschedd and nodes 1..NODES.
# gschedd's namespace is $netns_sched at $sched_ip, node I's ${netns_node[I]} at
# 10.77.0.(10+I); node I's link (bridge side) is ${netns_link[I]}, gschedd's ${netns_link[0]}.
netns_up() {
  local n=$1 i ns out
  netns_usable
  netns_tag=g$(printf '%x%02x' $$ $((RANDOM % 256)))
  netns_sched=gsched-$netns_tag-sched
  netns_node=("")
  netns_link=("${netns_tag}h0")
  out=$(ip netns add "$netns_sched" 2>&1) || skip "ip netns add failed: $out"
  netns_names+=("$netns_sched")
  out=$(ip link add "${netns_tag}br" type bridge 2>&1) || skip "no Linux bridge: $out"
  netns_bridge=${netns_tag}br
  # Bridged frames skip iptables (br_netfilter, where loaded, would otherwise apply a host
  # firewall's FORWARD policy to them).
  ip link set "$netns_bridge" type bridge nf_call_iptables 0 2>/dev/null
  ip link set "$netns_bridge" up || fail "bridge $netns_bridge not up"
  for ((i = 1; i <= n; i++)); do
    ns=gsched-$netns_tag-node$i
    ip netns add "$ns" || fail "ip netns add $ns failed"
    netns_names+=("$ns")
    netns_node+=("$ns")
    netns_link+=("${netns_tag}h$i")
  done
  for ((i = 0; i <= n; i++)); do
    if [ $i = 0 ]; then ns=$netns_sched; else ns=${netns_node[i]}; fi
    out=$(ip link add "${netns_link[i]}" type veth peer name "${netns_tag}p$i" 2>&1) ||
      skip "no veth pairs: $out"
    netns_links+=("${netns_link[i]}")
    ip link set "${netns_tag}p$i" netns "$ns" &&
      ip -n "$ns" link set "${netns_tag}p$i" name eth0 &&
      ip -n "$ns" addr add "$(netns_ip "$i")/24" dev eth0 &&
      ip -n "$ns" link set eth0 up &&
      ip -n "$ns" link set lo up &&
      ip link set "${netns_link[i]}" master "$netns_bridge" up || fail "cannot wire $ns"
  done
}

# netns_probe: fails, printing why, where netns_up would skip; a trial namespace, bridge and
# link are made and removed in a subshell of their own.
netns_probe() {
  local why rc
  why=$(
    tmp=$(mktemp -d) netns_names=() netns_links=() netns_bridge=""
    trap netns_cleanup EXIT
    netns_up 0
  )
  rc=$?
  [ $rc = 0 ] || echo "${why#\[SKIP\] netns::*: }"
  return $rc
}

netns_ip() { if [ "$1" = 0 ]; then echo "$sched_ip"; else echo "10.77.0.$((10 + $1))"; fi; }

# link_down I / link_up I: node I's link (0: gschedd's) down or up.
link_down() { ip link set "${netns_link[$1]}" down || fail "cannot cut link ${netns_link[$1]}"; }
link_up() { ip link set "${netns_link[$1]}" up || fail "cannot mend link ${netns_link[$1]}"; }

# write_config [LINE...]: $tmp/gsched.toml for gschedd at $sched_ip:$sched_port, its socket
# and state in $tmp, the key $tmp/gsched.key; each LINE follows in [scheduler]. Workers
# keep their ledgers in $tmp/wrk and run root's jobs, without cgroups (a worker in these
# tests is one node among several on one machine; containment is cgroups.sh's).
write_config() {
  (umask 077 && head -c 32 /dev/urandom > "$tmp/gsched.key")
  mkdir -p "$tmp/wrk" "$tmp/work" "$tmp/tasks"
  {
    printf '[scheduler]\nhost = "%s"\nport = %s\n' "$sched_ip" "$sched_port"
    printf 'socket = "%s"\nstate_dir = "%s"\nauth_key = "%s"\n' "$tmp/gschedd.sock" \
      "$tmp/state" "$tmp/gsched.key"
    printf '%s\n' "$@"
    printf '[worker]\nallow_root_jobs = true\ncgroups = "off"\nlog_dir = "%s"\n' "$tmp/wrk"
  } > "$tmp/gsched.toml"
}

# start_gschedd: gschedd in its namespace, logging to $tmp/gschedd.log; sets sched_pid.
start_gschedd() {
  rm -f "$tmp/gschedd.sock"
  nsenter --net=/run/netns/"$netns_sched" "$bin/gschedd" --config "$tmp/gsched.toml" \
    2>>"$tmp/gschedd.log" &
  sched_pid=$!
  disown "$sched_pid"
  wait_for "gschedd to listen" 20 test -S "$tmp/gschedd.sock"
}

# start_worker I [OPTIONS...]: node I's worker in its namespaces, named by its host name
# (nodeI), logging to $tmp/nodeI.log; sets worker_pid[I]. nsenter, unshare and sh each
# exec the next program, so the pid is the worker's.
worker_pid=()
start_worker() {
  local i=$1
  shift
  nsenter --net=/run/netns/"${netns_node[i]}" unshare --uts \
    sh -c 'hostname "$1" && shift && exec "$@"' sh "node$i" \
    "$bin/gsched-workerd" --config "$tmp/gsched.toml" --scheduler "$sched_ip:$sched_port" "$@" \
    2>>"$tmp/node$i.log" &
  worker_pid[i]=$!
  disown "$!"
}

# registrations I: how many times node I's worker has registered (its log).
registrations() { grep -c 'node=node[0-9]* heartbeat_ms=[0-9]* registered' "$tmp/node$1.log"; }

node_state() { # node_state NAME STATE: gschedd lists the node with that state
  "$bin/gsched" nodes --json "$1" | python3 -c '
import json, sys
nodes = json.load(sys.stdin)
sys.exit(0 if nodes and nodes[0]["state"] == sys.argv[1] else 1)' "$2"
}

# jq JOB EXPR: a Python expression over `gsched show JOB --json`, with the job as j, its
# history as h and its task exits as t; prints the result.
jq() {
  local out
  out=$("$bin/gsched" show "$1" --json 2>&1) || fail "show $1 failed: $out"
  python3 -c '
import json, sys
d = json.loads(sys.argv[1]); j = d["job"]; h = d["history"]; t = d["task_exits"]
r = eval("(" + sys.argv[2] + ")")
print(json.dumps(r) if isinstance(r, (list, dict)) else r)' "$out" "$2" || fail "jq $1 '$2' on: $out"
}
is() { [ "$(jq "$1" "$2" 2>/dev/null)" = True ]; }
expect() {
  is "$1" "$2" || fail "job $1: expected ${3:-$2}; the job: $(jq "$1" '{k: j[k] for k in
    ("state", "reason", "exit_code", "restart_count", "allocation")} | {"history":
    [(e["state"], e["reason"]) for e in h], "task_exits": t}')"
}

# kill_wait SIGNAL PID...: signals the daemons and waits (20 s at most) until they are gone.
kill_wait() {
  local sig=$1 p
  shift
  kill "-$sig" "$@" 2>/dev/null
  for p in "$@"; do wait_for "pid $p to exit" 20 gone "$p"; done
}
# gone PID: no such process. The daemons are disowned when started (no "Killed" notices from
# this shell), and the shell still reaps them, so none lingers as a zombie.
gone() { ! kill -0 "$1" 2>/dev/null; }

# submit FILE [OPTIONS...]: submits from $tmp/work, prints the job id.
submit() {
  local out
  out=$(cd "$tmp/work" && "$bin/gsched" submit "$@" --json 2>&1) || fail "submit $* refused: $out"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["job_id"])' "$out" ||
    fail "submit $*: unexpected output: $out"
}

# task_script [BODY]: a job script that appends "start JOB HOST PID RANK" to
# $tmp/tasks/JOB.log, then BODY (default: nothing), then "end JOB HOST PID RANK". HOST is
# the node's host name (the task is in its worker's UTS namespace).
task_script() {
  printf '%s\n' 'log='"$tmp"'/tasks/$GSCHED_JOB_ID.log' \
    'me="$GSCHED_JOB_ID $(hostname) $$ $GSCHED_NODE_RANK"' \
    'echo "start $me" >> "$log"' "${1:-}" 'echo "end $me" >> "$log"'
}

# tick_until GATE: a task body that appends "tick ..." every 0.1 s until $tmp/GATE exists
# (at most 60 s, so no task outlives a failed test by long). With "deaf", SIGTERM is only
# noted ("term ..."), as a job that checkpoints on SIGTERM and keeps going would.
tick_until() {
  [ "${2:-}" = deaf ] && printf '%s\n' 'trap '\''echo "term $me" >> "$log"'\'' TERM'
  printf '%s\n' 'i=0' \
    'while [ ! -e '"$tmp/$1"' ] && [ $i -lt 600 ]; do' \
    '  echo "tick $me" >> "$log"; sleep 0.1; i=$((i+1))' 'done'
}

# task_job NAME MAX_RESTARTS BODY [RESOURCE-LINE...]: $tmp/work/NAME.toml, a job whose
# script is task_script BODY, with those [resources] lines (none: one node) and
# max_restarts.
task_job() {
  local name=$1 restarts=$2 body=$3 line q="'''"
  shift 3
  {
    printf 'name = "%s"\n' "$name"
    [ $# -gt 0 ] && printf '[resources]\n'
    for line in "$@"; do printf '%s\n' "$line"; done
    printf '[run]\nscript = %s\n%s\n%s\n[restart]\nmax_restarts = %s\n' \
      "$q" "$(task_script "$body")" "$q" "$restarts"
  } > "$tmp/work/$name.toml"
}

# check_logs: the sanitizer build's daemons report into their logs; those count too.
check_logs() {
  if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp"/*.log; then
    fail "sanitizer report in a daemon's log"
  fi
}
