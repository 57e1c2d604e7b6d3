#!/usr/bin/env bash
# chaos.sh BIN_DIR SRC_DIR [SECONDS [SEED [JOBS]]]: a randomized, seeded fault run of
# gschedd and three workers (chaos.py says what happens; check.py what must hold): for
# SECONDS (default 40), JOBS (default 200) jobs of 1-2 nodes, some failing, some requeue-able,
# while gschedd and workers are killed with -9 and started again and, with network
# namespaces, links are cut, at moments drawn from SEED (default 1). Then every job must have
# ended, each acknowledged submit be there once, no job have run two attempts at once, each
# recorded outcome match what its tasks did, and the database pass PRAGMA integrity_check.
# As root with `ip netns`, each daemon is in its own network namespace on a bridge
# (tests/netns/lib.sh); elsewhere all run on loopback, without link cuts (it says so). All
# files of the run stay in a directory it names when it fails (KEEP=1: always), for
# tests/chaos/check.py to read again. Faults come one at a time (the next waits until the
# last is undone); CHAOS_OVERLAP=1 lets them overlap (which once found the gang gap that
# tests/netns/gang.sh now checks: a multi-node job's next attempt beside a rank of the last
# one on a node that is cut off). bench/chaos.sh runs it long, overlapping.
name="chaos"
. "$(dirname "$0")/../netns/lib.sh" "$1" "$2"
secs=${3:-40}
seed=${4:-1}
njobs=${5:-200}

if why=$(netns_probe); then
  netns_up 3
  layout=(--netns "$netns_sched,${netns_node[1]},${netns_node[2]},${netns_node[3]}"
    --links "${netns_link[0]},${netns_link[1]},${netns_link[2]},${netns_link[3]}"
    --sched-addr "$sched_ip:$sched_port")
else
  echo "chaos: no network namespaces here ($why): on loopback, no links cut"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
  layout=(--sched-addr "127.0.0.1:$port")
fi

[ "${CHAOS_OVERLAP:-0}" = 1 ] && layout+=(--overlap)
python3 "$src/tests/chaos/chaos.py" --bin "$bin" --src "$src" --tmp "$tmp" --seconds "$secs" \
  --seed "$seed" --jobs "$njobs" "${layout[@]}"
rc=$?
if [ $rc != 0 ] || [ "${KEEP:-0}" = 1 ]; then
  keep=$(mktemp -d "${TMPDIR:-/tmp}/gsched-chaos.XXXXXX")
  cp -a "$tmp"/. "$keep"/ 2>/dev/null
  echo "chaos: the run's files are in $keep (python3 $src/tests/chaos/check.py" \
    "$keep/state $keep/tasks $keep/submits.jsonl)"
fi
exit $rc
