#!/usr/bin/env bash
# update.sh BIN_DIR SRC_DIR: `scontrol update JobId=ID KEY=VALUE...` on pending jobs (issue
# 18), on a `gsched up` cluster of one worker with partitions "main" and "short" (10 min at
# most). Root sets a priority, a time limit, a partition and a dependency; each is shown and
# kept across a gschedd restart. A request with one bad value changes nothing. A job
# submitted with --begin=now+3 waits (BeginTime) and starts after that time; one whose time
# limit would pass its --deadline is cancelled, one that can make it runs, and a deadline
# without a time limit or before the begin time is refused. A user may
# raise their job's nice, lower its time limit and move it, but not set its priority, give
# a negative nice, raise its time limit or touch another's job. A running job's time limit
# changes (only that): root raises one past its old end and the job runs on, then lowers it
# below what the job has run and it ends at once, TIMEOUT; a user may lower their running
# job's limit, not raise it. scontrol write batch_script writes a job's script as submitted
# to stdout or a file (0600), for its owner and root only; a job running a command has none.
# squeue %o shows a job's command line to its owner and root alone. Name, Comment, WCKey and
# StartTime change; Features and ExcNodeList no node could give are refused.
name="integration_update"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 0 --partition main:default --partition short:max_time=10m

sbatch() { # sbatch OPTIONS...: prints the job id
  local out
  out=$("$bin/gsched" sbatch --parsable -o /dev/null "$@" 2>&1) || fail "sbatch $*: $out"
  echo "${out%%;*}"
}
update() { "$bin/gsched" scontrol update "$@" 2>&1; }
spec() { jq "$1" "j['spec']$2"; }

a=$(sbatch --hold -t 60 --wrap=true) || exit 1
b=$(sbatch --hold -t 60 --wrap=true) || exit 1

# --- root: priority, time limit, dependency, partition --------------------------------------
out=$(update JobId="$a" Priority=500 TimeLimit=30) || fail "update $a: $out"
[ "$(spec "$a" "['priority']")" = 500 ] || fail "priority: $(spec "$a" "['priority']")"
[ "$(spec "$a" "['resources']['time_limit_s']")" = 1800 ] || fail "time limit: $(spec "$a" "['resources']")"
expect "$a" 'j["priority"] == 500' "its priority 500"
expect "$a" 'any("updated by root: Priority=500 TimeLimit=30:00" in e["reason"] for e in h)' \
  "the update in its history"
out=$(update JobId="$a" Dependency=afterok:"$b") || fail "dependency: $out"
expect "$a" 'j["spec"]["depends_on"] == [{"type": "AFTEROK", "job_id": '"$b"'}]' "afterok:$b"
"$bin/gsched" scontrol release "$a" > /dev/null || fail "release $a"
wait_for "$a to wait on $b" 10 is "$a" 'j["reason"] == "Dependency"'
"$bin/gsched" scontrol hold "$a" > /dev/null || fail "hold $a"
out=$(update JobId="$a" Dependency=) || fail "clearing the dependency: $out"
expect "$a" 'j["spec"]["depends_on"] == []' "no dependency"

# --- one bad value: nothing changes -----------------------------------------------------------
out=$(update JobId="$a" Nice=20 Partition=nosuch) && fail "Partition=nosuch: $out"
case $out in *"Partition: no partition 'nosuch'"*) ;; *) fail "Partition=nosuch: $out" ;; esac
[ "$(spec "$a" "['nice']")" = 0 ] || fail "a refused update changed nice: $(spec "$a" "['nice']")"
out=$(update JobId="$a" Partition=short) && fail "30 min into short: $out"
case $out in *"TimeLimit: partition 'short' allows jobs at most 10:00"*) ;; *) fail "short: $out" ;; esac
out=$(update JobId="$a" Dependency=afterok:99999) && fail "afterok:99999: $out"
case $out in *"job 99999 does not exist"*) ;; *) fail "afterok:99999: $out" ;; esac
out=$(update JobId="$a" Colour=red) && fail "Colour=: $out"
case $out in *"not supported: Colour=red"*) ;; *) fail "Colour=: $out" ;; esac
out=$(update JobId=abc Nice=1) && fail "JobId=abc: $out"
case $out in *"Invalid job id specified: abc"*) ;; *) fail "JobId=abc: $out" ;; esac
out=$(update JobId="$a" TimeLimit=soon) && fail "TimeLimit=soon: $out"
case $out in *"Invalid TimeLimit value: soon"*) ;; *) fail "TimeLimit=soon: $out" ;; esac
out=$(update JobId="$a" TimeLimit=5 Partition=short) || fail "5 min into short: $out"
expect "$a" 'j["partition"] == "short" and j["spec"]["resources"]["time_limit_s"] == 300' "in short, 5 min"

# --- its name, comment, WCKey, start time; features and excluded nodes no node could give ---------
out=$(update JobId="$a" Name=renamed "Comment=two words" WCKey=ml7 StartTime=now+1hour) ||
  fail "Name/Comment/WCKey/StartTime: $out"
expect "$a" 'j["name"] == "renamed" and j["spec"]["comment"] == "two words" and
  j["spec"]["wckey"] == "ml7" and j["spec"]["begin_time_ms"] > j["submit_time_ms"] + 3000000' \
  "renamed, commented, ml7, starting in an hour"
out=$(update JobId="$a" StartTime=now) || fail "StartTime=now: $out"
expect "$a" '"begin_time_ms" not in j["spec"]' "no start time"
out=$(update JobId="$a" ExcNodeList=node1) && fail "ExcNodeList=node1 on one node: $out"
case $out in *"ExcNodeList: the job may use 0 node(s)"*) ;; *) fail "ExcNodeList=node1: $out" ;; esac
out=$(update JobId="$a" Features=h999) && fail "Features=h999: $out"
case $out in *"Features: no node has the feature 'h999'"*) ;; *) fail "Features=h999: $out" ;; esac
out=$(update JobId="$a" "Features=h999|(a100") && fail "Features=h999|(a100: $out"
case $out in *"Features: 'h999|(a100': at character 11: ')' expected"*) ;;
  *) fail "Features=h999|(a100: $out" ;; esac
expect "$a" 'j["spec"]["resources"]["exclude"] == [] and j["spec"]["resources"]["constraint"] == ""' \
  "no features or excluded nodes after the refusals"
out=$(update JobId="$a" Name=a/b) && fail "Name=a/b: $out"
case $out in *"Name: 1 to 128 characters without '/'"*) ;; *) fail "Name=a/b: $out" ;; esac

# --- kept across a gschedd restart ------------------------------------------------------------
restart_sched 1
expect "$a" 'j["spec"]["priority"] == 500 and j["partition"] == "short" and
  j["spec"]["resources"]["time_limit_s"] == 300 and j["name"] == "renamed" and
  j["spec"]["wckey"] == "ml7"' "the updates after a restart"

# --- another user: their own job within limits, nobody else's ---------------------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp" "$state" # the socket is 0666: let others through the directories
  mkdir -m 777 "$tmp/nobody" && cd "$tmp/nobody" || exit 1
  as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$bin/gsched" "$@" 2>&1; }
  out=$(as_nobody sbatch --parsable --hold -t 20 -o /dev/null --wrap=true) || fail "nobody's sbatch: $out"
  n=${out%%;*}
  out=$(as_nobody scontrol update JobId="$n" Nice=5 TimeLimit=10) || fail "nobody's own update: $out"
  expect "$n" 'j["spec"]["nice"] == 5 and j["spec"]["resources"]["time_limit_s"] == 600' "nice 5, 10 min"
  out=$(as_nobody scontrol update JobId="$n" TimeLimit=15) && fail "nobody raised a time limit: $out"
  case $out in *"only root may raise a job's time limit"*) ;; *) fail "raise: $out" ;; esac
  out=$(as_nobody scontrol update JobId="$n" Priority=9) && fail "nobody set a priority: $out"
  case $out in *"only root may set a job's priority"*) ;; *) fail "priority: $out" ;; esac
  out=$(as_nobody scontrol update JobId="$n" Nice=-1) && fail "nobody's negative nice: $out"
  case $out in *"only root may give a negative nice"*) ;; *) fail "negative nice: $out" ;; esac
  out=$(as_nobody scontrol update JobId="$a" Nice=50) && fail "nobody updated root's job: $out"
  case $out in *"permission denied"*) ;; *) fail "root's job: $out" ;; esac
  out=$(update JobId="$n" TimeLimit=1:00:00) || fail "root raising nobody's limit: $out"
  expect "$n" 'j["spec"]["resources"]["time_limit_s"] == 3600' "root's raise"
  # scontrol write batch_script: the owner's own (the file 0600), root's any, not another's
  out=$(as_nobody scontrol write batch_script "$n") || fail "nobody's write batch_script: $out"
  [ "$out" = "batch script for job $n written to slurm-$n.sh" ] || fail "write: $out"
  [ "$(stat -c %a "slurm-$n.sh")" = 600 ] || fail "the script's mode: $(stat -c %a "slurm-$n.sh")"
  grep -qx "true" "slurm-$n.sh" || fail "the script written: $(cat "slurm-$n.sh")"
  out=$(as_nobody scontrol write batch_script "$a" -) && fail "nobody read root's script: $out"
  case $out in *"Unable to retrieve batch script for job $a: Access/permission denied"*) ;;
    *) fail "root's script: $out" ;; esac
  "$bin/gsched" scontrol write batch_script "$n" - | grep -qx "true" || fail "root reading nobody's script"
  # squeue %o: a job's command line (from standard input: no job file's path to show),
  # quoted as typed, for its owner and root alone
  job_file argv.toml 'hold = true
[run]
command = ["sleep", "1 2"]'
  g=$(submit - < "$work/argv.toml")
  out=$("$bin/gsched" squeue -h -j "$g" -o %o) || fail "squeue %o: $out"
  [ "$out" = "sleep '1 2'" ] || fail "root's squeue %o: $out"
  out=$(as_nobody squeue -h -j "$g" -o %o) || fail "nobody's squeue %o: $out"
  [ "$out" = "(null)" ] || fail "nobody saw root's command line: $out"
  "$bin/gsched" scancel "$g" || fail "scancel $g"
  cd "$work" || exit 1
fi

# --- scontrol write batch_script: the script as submitted --------------------------------------
printf '#!/bin/bash\n#SBATCH -J kept --hold\necho "$1"\n' > "$work/kept.sh"
k=$(sbatch "$work/kept.sh" arg) || exit 1
out=$("$bin/gsched" scontrol write batch_script "$k" -) || fail "write batch_script $k -: $out"
[ "$out" = "$(cat "$work/kept.sh")" ] || fail "the script written to stdout: $out"
out=$("$bin/gsched" scontrol write batch_script "$k" "$work/copy.sh") || fail "write to a file: $out"
cmp -s "$work/kept.sh" "$work/copy.sh" || fail "the file written: $(cat "$work/copy.sh")"
out=$("$bin/gsched" scontrol write batch_script 99999 2>&1) && fail "job 99999: $out"
case $out in *"Invalid job id specified: 99999"*) ;; *) fail "job 99999: $out" ;; esac
job_file cmd.toml 'hold = true
[run]
command = ["true"]'
c=$(submit "$work/cmd.toml")
out=$("$bin/gsched" scontrol write batch_script "$c" 2>&1) && fail "a command job's script: $out"
case $out in *"job $c has no batch script"*) ;; *) fail "a command job: $out" ;; esac
"$bin/gsched" scancel "$k" "$c" || fail "scancel $k $c"

# --- sbatch --begin: not before its time ------------------------------------------------------
late=$(sbatch --begin=now+3 --wrap=true) || exit 1
expect "$late" 'j["state"] == "PENDING"' "a job with a begin time in 3 s to wait"
wait_for "$late to wait for its begin time" 10 is "$late" 'j["reason"] == "BeginTime"'
wait_end "$late" 30 || fail "the --begin job failed"
expect "$late" 'j["start_time_ms"] >= j["submit_time_ms"] + 2500' "its start after its begin time"

# --- sbatch --deadline: removed while pending once it could not end by then -----------------
dead=$(sbatch -t 10 --deadline=now+60 --wrap=true) || exit 1
wait_for "$dead cancelled past its deadline" 10 \
  is "$dead" 'j["state"] == "CANCELLED" and "deadline" in j["reason"]'
ok=$(sbatch -t 1 --deadline=now+1hour --wrap=true) || exit 1
wait_end "$ok" 30 || fail "the job with a reachable deadline failed"
out=$("$bin/gsched" sbatch -o /dev/null --deadline=now+60 --wrap=true 2>&1) &&
  fail "a deadline without a time limit accepted: $out"
case $out in *"a job with a deadline needs a time limit"*) ;; *) fail "no time limit: $out" ;; esac
out=$("$bin/gsched" sbatch -o /dev/null -t 1 --begin=now+2hours --deadline=now+1hour --wrap=true 2>&1) &&
  fail "a deadline before the begin time accepted: $out"
case $out in *"deadline comes before the begin time"*) ;; *) fail "begin after deadline: $out" ;; esac

# --- a running job --------------------------------------------------------------------------
{ echo "#!/bin/sh"; gate_wait run; } > "$work/run.sh"
r=$(sbatch run.sh) || exit 1
wait_start "$r"
out=$(update JobId="$r" Nice=5) && fail "a running job's nice updated: $out"
case $out in *"is RUNNING: only its TimeLimit, Name, Comment and WCKey can be changed"*) ;; *) fail "running: $out" ;; esac
out=$(update JobId="$r" Comment=busy) || fail "a running job's comment: $out"
expect "$r" 'j["comment"] == "busy"' "a running job's new comment"
out=$(update JobId="$r" StartTime=now+1hour) && fail "a running job's start time updated: $out"
gate run
wait_end "$r" || fail "the running job failed"

# --- a running job's time limit: raised past its old end, then lowered below its run time ---
t=$(sbatch -t 0:05 --wrap="sleep 600") || exit 1
wait_start "$t"
out=$(update JobId="$t" TimeLimit=10) || fail "raising a running job's limit: $out"
expect "$t" 'j["spec"]["resources"]["time_limit_s"] == 600' "10 min"
sleep 6
expect "$t" 'j["state"] == "RUNNING"' "it running past its old 5 s limit"
out=$(update JobId="$t" TimeLimit=0:03) || fail "lowering a running job's limit: $out"
wait_end "$t" 5
expect "$t" 'j["state"] == "TIMEOUT" and j["spec"]["resources"]["time_limit_s"] == 3' \
  "TIMEOUT at once, its new limit passed"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  cd "$tmp/nobody" || exit 1
  out=$(as_nobody sbatch --parsable -t 10 -o /dev/null --wrap="sleep 600") || fail "nobody's sbatch: $out"
  n=${out%%;*}
  wait_start "$n"
  out=$(as_nobody scontrol update JobId="$n" TimeLimit=20) && fail "nobody raised a running limit: $out"
  case $out in *"only root may raise a job's time limit"*) ;; *) fail "running raise: $out" ;; esac
  out=$(as_nobody scontrol update JobId="$n" TimeLimit=0:01) || fail "nobody lowering: $out"
  wait_end "$n" 5
  expect "$n" 'j["state"] == "TIMEOUT"' "nobody's job ended by its lowered limit"
  cd "$work" || exit 1
fi
check_logs
stop_cluster
echo "$name: passed"
