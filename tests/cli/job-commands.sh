#!/usr/bin/env bash
# job-commands.sh GSCHED FAKE_GSCHEDD SRC_DIR: the job commands (submit, queue, show,
# cancel, hold, release, suspend, resume, wait, logs) against fake_gschedd, which answers
# from a fixed script (see fake_gschedd.c): what each prints, on which stream, and its exit
# status.
set -u
gsched=$1
fake=$2
src=$3
fail() { echo "job-commands: $*" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/gsched-jobcmd.XXXXXX")
fake_pid=
cleanup() { [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
export GSCHED_SOCKET=$dir/gschedd.sock
"$fake" "$GSCHED_SOCKET" "$dir/record" &
fake_pid=$!
for _ in $(seq 100); do [ -S "$GSCHED_SOCKET" ] && break; sleep 0.05; done
[ -S "$GSCHED_SOCKET" ] || fail "fake_gschedd did not start"

# run WANT_STATUS CMD...: runs gsched, leaves stdout in $out and stderr in $err.
run() {
  local want=$1 rc
  shift
  out=$("$gsched" "$@" 2>"$dir/stderr")
  rc=$?
  err=$(cat "$dir/stderr")
  # A sanitizer build reports into the stderr captured here, which run-checked.sh never sees.
  if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' <<< "$err"; then
    fail "gsched $*: sanitizer report: $err"
  fi
  [ "$rc" -eq "$want" ] || fail "gsched $*: exit $rc, want $want; stdout: $out; stderr: $err"
}
has() { grep -qF -- "$2" <<< "$1" || fail "missing '$2' in: $1"; }

mkdir "$dir/work"
cp "$src/examples/hello.toml" "$dir/work/job.toml"
cd "$dir/work" || fail "no work dir"

# submit: absolute paths and the user are sent; warnings go to stderr.
run 0 submit job.toml
[ "$out" = "Submitted job 42" ] || fail "submit printed: $out"
has "$err" "gsched submit: warning: no node has the feature 'h100' today"
has "$(cat "$dir/record")" "submit workdir=$dir/work source=$dir/work/job.toml user=$(id -un) hold=0"

# --wait (first: the fake completes job 42 on its second WaitRequest) exits as the job.
run 0 submit --wait --parsable ./job.toml
[ "$out" = "42" ] || fail "--parsable printed: $out"
has "$err" "job 42 RUNNING 00:00:0"
has "$err" "job 42 COMPLETED exit=0 elapsed=00:00:03"
run 0 submit --json --hold job.toml
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["job_id"] == 42 and d["state"] == "PENDING", d' "$out" \
  || fail "submit --json: $out"
has "$(tail -1 "$dir/record")" "hold=1"

# A bad job file is reported by place and nothing is sent; the scheduler's details too.
lines=$(wc -l < "$dir/record")
run 1 submit "$src/tests/cli/bad-job.toml"
has "$err" "bad-job.toml:3:1: unknown key 'gpu_per_node'"
[ "$(wc -l < "$dir/record")" -eq "$lines" ] || fail "a bad job file was sent"
sed 's/^name = .*/name = "rejected"/' job.toml > rejected.toml
run 1 submit rejected.toml
has "$err" "gsched submit: rejected.toml: job rejected"
has "$err" "job.toml:3:1: resources.nodes: only 2 nodes"

# queue: an aligned squeue table; finished jobs only with --all.
run 0 queue
grep -qE '^JOBID +NAME +USER +ST +TIME +NODES +GPUS +NODELIST\(REASON\)$' <<< "$out" || fail "queue header: $out"
# Pending elements of array 50 waiting for the same reason fold into one line, as squeue's.
grep -qE '^50_0 +sweep +alice +R ' <<< "$out" || fail "queue array element: $out"
grep -qE '^50_\[1-3,5\] +sweep +alice +PD +0:00 +1 +1 +\(JobArrayTaskLimit\)$' <<< "$out" ||
  fail "queue folded array: $out"
grep -qE '^50_4 +sweep +alice +PD .*\(Held\)$' <<< "$out" || fail "queue held element: $out"
run 0 queue --array
[ "$(grep -cE '^50_[0-9]+ ' <<< "$out")" = 6 ] || fail "queue --array: one line per element: $out"
grep -qE '^42 +train +alice +R +[0-9]+:[0-9]{2} +2 +4 +n1,n2$' <<< "$out" || fail "queue row 42: $out"
grep -qE '^43 +a-much-longer-name +1001 +PD +0:00 +1 +8 +\(Resources\)$' <<< "$out" \
  || fail "queue row 43: $out"
grep -q '^41 ' <<< "$out" && fail "finished job listed without --all: $out"
run 0 queue --all
grep -qE '^41 +prep +1001 +CD +1:01 ' <<< "$out" || fail "queue --all: $out"
run 0 queue --json 42
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d) == 1 and d[0]["state"] == "RUNNING" and d[0]["allocation"][1]["node_name"] == "n2", d' "$out" \
  || fail "queue --json: $out"
run 2 queue --state bogus
has "$err" "unknown job state 'bogus'"
# A suspended job (49: RUNNING on the wire, suspended) shows as S, its TIME stopped at what
# it ran before (4:00); --state S asks for the running jobs and keeps it alone, R the others.
run 0 queue
grep -qE '^49 +ckpt +alice +S +4:00 +1 +1 +n1$' <<< "$out" || fail "queue suspended row: $out"
run 0 queue --state S
[ "$(tail -n +2 <<< "$out" | cut -d' ' -f1)" = 49 ] || fail "queue --state S: $out"
run 0 queue --state running,pd
grep -q '^49 ' <<< "$out" && fail "queue --state running listed the suspended job: $out"
grep -qE '^42 +train +alice +R ' <<< "$out" || fail "queue --state running,pd: $out"
grep -qE '^43 ' <<< "$out" || fail "queue --state running,pd: $out"
run 0 queue --state SUSPENDED --json
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert [j["job_id"] for j in d] == [49] and d[0]["state"] == "RUNNING" and d[0]["suspended"] is True and d[0]["suspended_ms"] == 60000 and d[0]["suspend_time_ms"] > d[0]["start_time_ms"], d' "$out" \
  || fail "queue --state SUSPENDED --json: $out"
run 0 show 49
has "$out" "State=SUSPENDED Reason=None"
grep -qE '^   Elapsed=00:04:00 TimeLimit=1:00:00 SuspendTime=[0-9-]+T[0-9:]+$' <<< "$out" ||
  fail "show 49's times: $out"

# show: Key=Value lines, history and tasks; an unknown job is the scheduler's error.
run 0 show 42
has "$out" "JobId=42 Name=train"
has "$out" "State=RUNNING Reason=None ExitCode=0:0 Restarts=0"
has "$out" "NodeList=n1[0,1],n2[0,1]"
has "$out" "Command=python3 train.py --name 'my run'"
has "$out" "History:"
has "$out" "Rank=1 Node=n2 ExitCode=0:0 EndReason=LAUNCH_FAILED Attempt=0 LaunchError=\"exec python3: No such file or directory\""
run 0 show --json 42
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["job"]["spec"]["run"]["argv"][3] == "my run" and d["history"][0]["state"] == "PENDING" and d["task_exits"][0]["end_reason"] == "LAUNCH_FAILED", d' "$out" \
  || fail "show --json: $out"
run 1 show 99
has "$err" "job 99: no such job"
# srun's request holds its launch key for this protocol
SLURM_JOB_ID=42 run 1 srun true
[ "$(tail -1 "$dir/record")" = "step launch_key=set" ] ||
  fail "srun's request to this gschedd: $(tail -1 "$dir/record")"

# cancel / hold / release: failures per job on stderr, quiet success unless --verbose.
run 1 cancel 42 7 --signal USR1 --reason "test"
has "$err" "gsched cancel: job 7: no such job"
grep -q "job 42" <<< "$err$out" && fail "cancel talked about job 42: $out $err"
run 0 hold -v 42 43
has "$out" "job 42: held (PENDING)"
run 0 release --json 42
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d == [{"job_id":42,"code":0,"message":"","state":"PENDING"}], d' "$out" \
  || fail "release --json: $out"
# An older gschedd refusing a field it does not know: named as this gsched knows it.
run 1 scancel --batch 41
has "$err" "gschedd speaks protocol 1.3 and does not know cancel_request.batch_only, which this gsched"
has "$err" "upgrade gschedd, or leave that option out"
grep -q "field=" <<< "$err" && fail "the refusal's details were printed: $err"
# An older gschedd is never sent a request it does not know (it would drop the connection):
# gsched says which protocol the request needs. What it knows goes through.
"$fake" "$dir/old.sock" "$dir/old-record" 25 &
old_pid=$!
for _ in $(seq 100); do [ -S "$dir/old.sock" ] && break; sleep 0.05; done
run 1 suspend --socket "$dir/old.sock" 42
has "$err" "gschedd speaks protocol 1.25, and suspend_request needs 1.26"
has "$err" "upgrade gschedd"
GSCHED_SOCKET=$dir/old.sock run 1 scontrol resume 42
has "$err" "suspend_request needs 1.26"
# srun -i TASK|FILE would be fed to task 0 (or to none) by a gschedd before 1.28.
SLURM_JOB_ID=42 GSCHED_SOCKET=$dir/old.sock run 1 srun -i 2 true
has "$err" "gschedd speaks protocol 1.25, and srun --input=TASK|FILE needs 1.28"
SLURM_JOB_ID=42 GSCHED_SOCKET=$dir/old.sock run 1 srun -i 'in-%t' true
has "$err" "srun --input=TASK|FILE needs 1.28"
# srun --gres=none would be given the job's GPUs by a gschedd before 1.29.
SLURM_JOB_ID=42 GSCHED_SOCKET=$dir/old.sock run 1 srun --gres=none true
has "$err" "gschedd speaks protocol 1.25, and srun --gres=none needs 1.29"
# srun's launch key (to send its request again after losing the connection) is left out
# for a gschedd before 1.30, which would refuse a field it does not know.
SLURM_JOB_ID=42 GSCHED_SOCKET=$dir/old.sock run 1 srun true
has "$err" "steps are not run by the fake"
run 0 hold --socket "$dir/old.sock" 42
[ "$(cat "$dir/old-record")" = "$(printf '%s\n' "step launch_key=none" "hold ids=42")" ] ||
  fail "the old gschedd saw: $(cat "$dir/old-record")"
kill "$old_pid"
run 2 cancel
run 2 cancel 0
has "$err" "not a job id: '0'"
run 2 cancel 42 --signal NOPE
run 2 hold 42 --signal TERM
has "$err" "unknown option '--signal'"

# suspend / resume: a SuspendRequest with the ids and resume set or not; refusals per job
# (gschedd names the job in its message), quiet success unless --verbose.
run 1 suspend 42 43 7
[ "$(tail -1 "$dir/record")" = "suspend ids=42,43,7 resume=0" ] || fail "suspend sent: $(tail -1 "$dir/record")"
has "$err" "gsched suspend: job 43 is not running: only running jobs can be suspended"
has "$err" "gsched suspend: job 7: no such job"
grep -q "job 42" <<< "$err$out" && fail "suspend talked about job 42: $out $err"
run 0 suspend -v 42
has "$out" "job 42: suspended (SUSPENDED)"
run 0 resume --verbose 49
[ "$(tail -1 "$dir/record")" = "suspend ids=49 resume=1" ] || fail "resume sent: $(tail -1 "$dir/record")"
has "$out" "job 49: resumed (RUNNING)"
run 1 resume --json 49 42
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d == [{"job_id":49,"code":0,"message":"","state":"RUNNING"},{"job_id":42,"code":-114,"message":"job 42 is not suspended","state":"RUNNING"}], d' "$out" \
  || fail "resume --json: $out"
has "$err" "gsched resume: job 42 is not suspended"
run 2 suspend
has "$err" "which jobs? (gsched suspend JOB...)"
run 2 resume 49 --signal STOP
has "$err" "unknown option '--signal'"
run 0 --help
has "$out" "suspend JOB... / resume JOB..."

# wait: each job's end line; the exit status follows the job(s).
run 3 wait 44
has "$out" "job 44 FAILED exit=3 elapsed=00:00:03 (rank 0 exited 3)"
run 137 wait 45
has "$out" "job 45 FAILED signal=9"
run 1 wait 42 44
has "$out" "job 42 COMPLETED exit=0"
run 0 wait --start --json 46
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["jobs"][0]["state"] == "RUNNING" and d["timed_out"] is False, d' "$out" \
  || fail "wait --start --json: $out"
run 1 wait --timeout 2s 46
has "$err" "gsched wait: timed out waiting for job 46"
run 2 wait 42 --timeout soon

# logs: the file raw, chunk after chunk; --tail counts from the end.
run 0 logs 42
[ "$out" = "$(printf 'hello\nworld')" ] || fail "logs printed: $out"
run 0 logs --tail 6 -f 42
[ "$out" = "world" ] || fail "logs --tail printed: $out"
run 1 logs 99
run 2 logs 42 43

echo "job-commands: ok"
