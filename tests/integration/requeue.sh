#!/usr/bin/env bash
# requeue.sh BIN_DIR SRC_DIR: a requeued job's next attempt does not start on a node before
# the previous attempt's task there has ended. On a `gsched up` cluster of three workers
# (1 s heartbeats, 1 s kill grace), a 2-node job with max_restarts = 1 whose first attempt
# ignores SIGTERM; kill -9 of the worker under its second node: gschedd ends the surviving
# task and requeues the job only once that task's exit is in (after SIGKILL, past the kill
# grace), onto the surviving node and the third, so the new task never sees the old one
# alive; the job then COMPLETES.
name="integration_requeue"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 3 --gpus-per-node 0 --heartbeat 1s --kill-grace 1s --fence-timeout 5s

# Each task works out its node's name; the first attempt records its pid per node and waits
# (deaf to SIGTERM), a later one says whether the first attempt's task there still lives.
job_file requeue.toml "name = \"requeue\"
[resources]
nodes = 2
[run]
script = '''
node=\$(echo \"\$GSCHED_NODELIST\" | cut -d, -f\$((GSCHED_NODE_RANK + 1)))
if [ -e $tmp/first-seen ]; then
  if [ -e $tmp/pid.\$node ] && kill -0 \"\$(cat $tmp/pid.\$node)\" 2>/dev/null; then
    echo \"clash \$node\" >> $tmp/req.log
  else
    echo \"after \$node\" >> $tmp/req.log
  fi
  exit 0
fi
echo \$\$ > $tmp/pid.\$node
echo \"first \$node\" >> $tmp/req.log
trap '' TERM
$(gate_wait never)
'''
[restart]
max_restarts = 1"
id=$(submit requeue.toml)
wait_start "$id"
wait_for "both first tasks" 15 eval '[ "$(grep -c "^first" "$tmp/req.log" 2>/dev/null)" = 2 ]'
touch "$tmp/first-seen"
keep=$(jq "$id" 'j["allocation"][0]["node_name"]')
lost=$(jq "$id" 'j["allocation"][1]["node_name"]')
kill -9 "$(cat "$state/$lost.pid")"
wait_end "$id" 30 || fail "the requeued job failed: $(jq "$id" '[j["reason"], h]'); $(cat "$tmp/req.log")"
expect "$id" 'j["state"] == "COMPLETED" and j["restart_count"] == 1 and
  "'"$lost"'" not in [a["node_name"] for a in j["allocation"]]' "requeued and completed"
grep -q "^after $keep\$" "$tmp/req.log" || fail "no second attempt on $keep: $(cat "$tmp/req.log")"
grep -q "^clash" "$tmp/req.log" && fail "the attempts overlapped: $(cat "$tmp/req.log")"
# gschedd moved the job only once the surviving task's exit was in (the worker's own hold of
# a launch while the last attempt's task lives, worker_launch.c, is the second line).
python3 - "$state/gschedd.log" "$id" "$keep" <<'PY' || fail "gschedd did not wait for the surviving task"
import sys
lines = open(sys.argv[1]).read().splitlines()
job, keep = sys.argv[2], sys.argv[3]
def at(text):
    return next(i for i, l in enumerate(lines) if f"job={job} " in l and text in l)
lost = at("job lost a node; its other tasks end before it moves")
ended = at(f"rank=0 node={keep} ")
requeued = at("job requeued")
sys.exit(0 if lost < ended < requeued else 1)
PY
# The dead worker's task is no one's now: the test ends it.
kill -9 "$(cat "$tmp/pid.$lost")" 2>/dev/null
check_logs
stop_cluster
echo "$name: passed"
