#!/usr/bin/env bash
# history_purge.sh BIN_DIR SRC_DIR: scheduler.purge_after deletes old records from the
# store (slurmdbd's PurgeJobAfter), on a `gsched up` cluster of one worker. Jobs run and
# end, node1 is drained and resumed; with gschedd stopped, the database is made to say
# they happened two hours ago (end, start and submit times, the node events, node history);
# gschedd restarted with purge_after = "1h" purges at once, logs it and counts it in
# /metrics (gsched_store_purged_jobs_total): `gsched show` and
# sacct no longer know the old jobs, their tasks, steps, allocations and events are gone
# from the database, and so are the node's old events; node history keeps node1's state
# at the horizon. What stays: a job that ended within the hour, a pending job, and an old
# finished job a held pending job depends on (gschedd still holds it). A new job's id,
# after another restart, is past every id ever given, also past the purged jobs' highest.
name="integration_history_purge"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 1 --heartbeat 1s
db() { # db SQL ARGS...: the first column of the first row (python's sqlite3), or fail
  python3 - "$state/gsched.db" "$@" <<'PY' || fail "database: $*"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
row = db.execute(sys.argv[2], [int(a) for a in sys.argv[3:]]).fetchone()
db.commit()
print(row[0] if row else "")
PY
}

# Submitted in this order so that the purged ones have the highest ids.
pinned=$(sbatch_id --wrap=true) || exit 1
dep=$(sbatch_id --hold --dependency=afterok:"$pinned" --wrap=true) || exit 1
pending=$(sbatch_id --hold --wrap=true) || exit 1
recent=$(sbatch_id --wrap=true) || exit 1
old1=$(sbatch_id --wrap=true) || exit 1
old2=$(sbatch_id --wrap='exit 3') || exit 1
for j in "$pinned" "$recent" "$old1"; do wait_end "$j" || fail "job $j failed"; done
wait_end "$old2" && fail "job $old2 did not fail"
"$bin/gsched" scontrol update NodeName=node1 State=DRAIN Reason=purge-test || fail "drain"
"$bin/gsched" scontrol update NodeName=node1 State=RESUME || fail "resume"
node_events() { db "SELECT COUNT(*) FROM events WHERE job_id IS NULL AND kind IN ('DRAIN', 'RESUME')"; }
drained_and_resumed() { [ "$(node_events)" = 2 ]; }
wait_for "node1's drain and resume on disk" 10 drained_and_resumed
[ "$(db "SELECT COUNT(*) FROM allocations WHERE job_id = ?" "$old1")" = 1 ] ||
  fail "job $old1 has no allocation row"

stop_sched() {
  local sched
  sched=$(cat "$state/gschedd.pid")
  kill -TERM "$sched"
  wait_for "gschedd (pid $sched) to stop" 10 eval "! pid_alive $sched"
}
stop_sched
two_h=$((2 * 3600 * 1000))
for j in "$pinned" "$old1" "$old2"; do
  db "UPDATE jobs SET submit_ms = submit_ms - ?, start_ms = start_ms - ?, end_ms = end_ms - ?
      WHERE id = ?" "$two_h" "$two_h" "$two_h" "$j" > /dev/null
done
db "UPDATE events SET at_ms = at_ms - ? WHERE job_id IS NULL" "$two_h" > /dev/null
db "UPDATE node_history SET at_ms = at_ms - ?" "$two_h" > /dev/null
rows_before=$(db "SELECT COUNT(*) FROM node_history WHERE node = 'node1'")
[ "$rows_before" -ge 3 ] || fail "node1's history: $rows_before rows (up, drained, up)"
top=$(db "SELECT MAX(id) FROM jobs")
[ "$top" = "$old2" ] || fail "the highest id is $top, not $old2"

sed -i 's/^\[scheduler\]$/[scheduler]\npurge_after = "1h"\nmin_job_age = "1s"/' "$state/gsched.toml"
out=$("$bin/gsched" up --state "$state" --workers 1 2>&1) || fail "up again: $out"
wait_for "the purge's log line" 20 grep -q 'purged=2 .*purge_after_s=3600 ' "$state/gschedd.log"
metric=$(python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen("http://%s/metrics" % sys.argv[1]).read().decode().splitlines():
    if l.startswith("gsched_store_purged_jobs_total "): print(l.split()[1])' "$(cat "$state/http.addr")")
[ "$metric" = 2 ] || fail "gsched_store_purged_jobs_total: '$metric', not 2"

# --- gone --------------------------------------------------------------------------------
for j in "$old1" "$old2"; do
  out=$("$bin/gsched" show "$j" 2>&1) && fail "show of the purged $j: $out"
  case $out in *"no such job"*) ;; *) fail "show of the purged $j: $out" ;; esac
  out=$("$bin/gsched" sacct -n -P -o JobID -j "$j" 2>&1)
  [ -z "$out" ] || fail "sacct -j $j still has: $out"
  for t in tasks steps allocations events; do
    [ "$(db "SELECT COUNT(*) FROM $t WHERE job_id = ?" "$j")" = 0 ] || fail "$t rows of the purged $j"
  done
done
[ "$(node_events)" = 0 ] || fail "node1's old drain and resume events stayed"

# --- kept ----------------------------------------------------------------------------------
expect "$recent" 'j["state"] == "COMPLETED"' "the recent job kept"
expect "$pending" 'j["state"] == "PENDING"' "the pending job kept"
expect "$pinned" 'j["state"] == "COMPLETED"' "the old job a pending one depends on kept"
[ "$(db "SELECT COUNT(*) FROM allocations WHERE job_id = ?" "$pinned")" = 1 ] ||
  fail "the pinned job's allocation row went"
horizon=$(db "SELECT MIN(at_ms) FROM node_history WHERE node = 'node1'")
[ "$(db "SELECT up FROM node_history WHERE node = 'node1' AND at_ms = ?" "$horizon")" = 1 ] ||
  fail "node1's state at the horizon: $(db "SELECT group_concat(at_ms || ':' || up) FROM node_history")"
[ "$(db "SELECT COUNT(*) FROM node_history WHERE node = 'node1' AND at_ms = ?" "$horizon")" = 1 ] ||
  fail "node1 has more than one row at the horizon"
now=$(date +%s%3N)
[ $((now - horizon)) -ge $((3600 * 1000 - 60000)) ] && [ $((now - horizon)) -le $((3600 * 1000 + 60000)) ] ||
  fail "node1's first row is not at the horizon (an hour ago): $horizon, now $now"

# --- ids go on from the highest ever given, also after a restart ----------------------------
stop_sched
out=$("$bin/gsched" up --state "$state" --workers 1 2>&1) || fail "up again: $out"
new=$(sbatch_id --wrap=true) || exit 1
[ "$new" = $((old2 + 1)) ] || fail "a new job got id $new, not $((old2 + 1))"
"$bin/gsched" scontrol release "$dep" > /dev/null || fail "release $dep"
wait_end "$dep" || fail "job $dep (afterok:$pinned) did not complete"
wait_end "$new" || fail "job $new failed"
check_logs
stop_cluster
echo "$name: passed"
