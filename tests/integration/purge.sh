#!/usr/bin/env bash
# purge.sh BIN_DIR SRC_DIR: finished jobs leave gschedd's memory after scheduler.min_job_age
# (issue 18, Slurm's MinJobAge) and are read back from the store, on a `gsched up` cluster of
# one worker whose gschedd is restarted with min_job_age = "1s". Jobs that end (one
# completes, one fails with exit 3, an array of three) are forgotten once past min_job_age
# and their submit key's hold (60 s: a retried submit must still find its job), which
# gschedd's log says; `gsched show --json` and `sacct -j` still answer for them with their
# state and exit code (an array's id brings its elements; their batch steps' lines come
# from the store too), `gsched logs` reads their output
# through their node's worker, sacct without -j lists them, and
# `gsched wait` answers at once with their end.
# A finished job a held pending job depends on (afterok) stays in memory until that one
# has started and ended, and a new submit naming a forgotten job is refused as unknown. A
# damaged stored row is a clear error and a deleted one "no such job", gschedd running on. A
# restarted gschedd does not load the forgotten jobs, and still answers for them.
name="integration_purge"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 1 --heartbeat 1s

total() { # how many jobs gschedd says it has forgotten in all (its latest log line)
  local t
  t=$(grep -o 'forgotten_total=[0-9]*' "$state/gschedd.log" | tail -1)
  echo "${t#forgotten_total=}"
}
forgotten() { [ "$(total)" -ge "$1" ]; } # forgotten N: at least N in all
sacct_line() { "$bin/gsched" sacct -n -P -o JobID,State,ExitCode "$@" 2>&1; }

# min_job_age goes into the [scheduler] table that `up` wrote (a key after another table's
# header would be that table's).
sed -i 's/^\[scheduler\]$/[scheduler]\nmin_job_age = "1s"/' "$state/gsched.toml"
grep -A1 '^\[scheduler\]$' "$state/gsched.toml" | grep -q '^min_job_age = "1s"$' ||
  fail "min_job_age not under [scheduler]: $(cat "$state/gsched.toml")"
restart_sched 1
grep -q 'min_job_age_s=1 ' "$state/gschedd.log" || fail "gschedd did not take min_job_age"

# --- jobs end; one of them is pinned by a held job that depends on it -----------------------
ok=$(sbatch_id --wrap=true) || exit 1
bad=$(sbatch_id -o "$work/bad.out" --wrap='echo purge-log-line; exit 3') || exit 1
arr=$(sbatch_id --array=0-2 --wrap=true) || exit 1
wait_end "$ok" || fail "job $ok failed"
wait_end "$bad" && fail "job $bad did not fail"
for e in 0 1 2; do wait_end $((arr + e)) || fail "array element $((arr + e)) failed"; done
dep=$(sbatch_id --hold --dependency=afterok:"$ok" --wrap=true) || exit 1
show_bad_before=$("$bin/gsched" show "$bad" --json) || fail "show $bad"

# bad and the array's 3 go; ok, submitted first and so forgettable first, stays while dep
# may still need its state: the count stops at 4
wait_for "4 finished jobs to be forgotten" 100 forgotten 4
[ "$(total)" = 4 ] || fail "job $ok was forgotten while job $dep depends on it ($(total) forgotten)"
[ "$(queue_count)" -ge 5 ] || fail "queue --all lost jobs: $(queue_count)"

# --- forgotten jobs answered from the store ----------------------------------------------------
expect "$bad" 'j["state"] == "FAILED" and j["exit_code"] == 3' "FAILED with exit code 3"
expect "$bad" 't[0]["exit_code"] == 3 and [e["state"] for e in h][-1] == "FAILED"' \
  "its task exit and history"
show_bad_after=$("$bin/gsched" show "$bad" --json) || fail "show $bad"
python3 -c 'import json, sys; a, b = (json.loads(x) for x in sys.argv[1:]); sys.exit(a != b)' \
  "$show_bad_before" "$show_bad_after" ||
  fail "show differs once forgotten: $show_bad_before vs $show_bad_after"
out=$("$bin/gsched" logs "$bad" 2>&1) || fail "logs of the forgotten $bad: $out"
case $out in *purge-log-line*) ;; *) fail "logs of the forgotten $bad: $out" ;; esac
line=$(sacct_line -j "$bad")
[ "$line" = "$(printf '%s\n' "$bad|FAILED|3:0" "$bad.batch|FAILED|3:0")" ] ||
  fail "sacct -j $bad: $line"
lines=$(sacct_line -X -j "$arr")
[ "$(echo "$lines" | grep -c '|COMPLETED|0:0$')" = 3 ] || fail "sacct -j $arr (an array): $lines"
all=$(sacct_line -a)
for j in "$ok" "$bad" "$arr" "$dep"; do
  echo "$all" | grep -q "^$j[|_]" || fail "sacct -a lacks job $j: $all"
done
out=$("$bin/gsched" wait "$bad" "$ok" --timeout 10s 2>&1) && fail "wait $bad $ok: $out"
case $out in *"$bad"*FAILED*) ;; *) fail "wait for the forgotten $bad: $out" ;; esac
out=$("$bin/gsched" show 99999 2>&1) && fail "show 99999: $out"
case $out in *"no such job"*) ;; *) fail "show 99999: $out" ;; esac
"$bin/gsched" squeue -h | grep -q "^ *$bad " && fail "squeue lists the forgotten $bad"

# --- dependencies: a new one on a forgotten job is refused; the pinned one is met -------------
out=$("$bin/gsched" sbatch --dependency=afterany:"$bad" --wrap=true 2>&1) &&
  fail "a dependency on the forgotten $bad was accepted: $out"
case $out in *"job $bad does not exist"*) ;; *) fail "dependency on $bad: $out" ;; esac
"$bin/gsched" scontrol release "$dep" > /dev/null || fail "release $dep"
wait_end "$dep" || fail "job $dep (afterok:$ok) did not complete"
wait_for "jobs $ok and $dep to be forgotten" 100 forgotten 6
expect "$ok" 'j["state"] == "COMPLETED"' "COMPLETED, read back"
expect "$dep" 'j["state"] == "COMPLETED"' "COMPLETED, read back"

# --- a damaged or a missing row: a clear error, and gschedd carries on -----------------------
python3 - "$state/gsched.db" $((arr + 1)) $((arr + 2)) << 'PY' || fail "editing the database"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("UPDATE jobs SET spec = x'ffff' WHERE id = ?", (int(sys.argv[2]),))
db.execute("DELETE FROM jobs WHERE id = ?", (int(sys.argv[3]),))
db.commit()
PY
out=$("$bin/gsched" show $((arr + 1)) 2>&1) && fail "show of a damaged row: $out"
case $out in *"stored record cannot be read"*) ;; *) fail "show of a damaged row: $out" ;; esac
out=$("$bin/gsched" show $((arr + 2)) 2>&1) && fail "show of a missing row: $out"
case $out in *"no such job"*) ;; *) fail "show of a missing row: $out" ;; esac
out=$(sacct_line -a) || fail "sacct -a beside a damaged row: $out"
echo "$out" | grep -q "^$bad|FAILED|3:0$" || fail "sacct -a beside a damaged row: $out"
pid_alive "$(cat "$state/gschedd.pid")" || fail "gschedd died reading a damaged row"

# --- a restarted gschedd leaves them in the store, and still answers for them -----------------
restart_sched 1
loaded=$(grep 'min_job_age_s=1 ' "$state/gschedd.log" | tail -1)
case $loaded in
  *" loaded=0 "* | *" loaded=1 "*) ;; # dep may have ended within the key hold: loaded, then forgotten
  *) fail "the restart loaded forgotten jobs: $loaded" ;;
esac
expect "$bad" 'j["state"] == "FAILED" and j["exit_code"] == 3' "FAILED with exit code 3 after a restart"
line=$(sacct_line -j "$ok")
[ "$line" = "$(printf '%s\n' "$ok|COMPLETED|0:0" "$ok.batch|COMPLETED|0:0")" ] ||
  fail "sacct -j $ok after a restart: $line"
check_logs
stop_cluster
echo "$name: passed"
