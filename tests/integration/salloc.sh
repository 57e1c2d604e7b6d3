#!/usr/bin/env bash
# salloc.sh BIN_DIR SRC_DIR: salloc and srun outside a job, end to end on a `gsched up`
# cluster of two workers with the hardware of tests/topologies/ws-4gpu.xml, through `salloc`,
# `srun` and `scancel` links to gsched as users type them:
#   - salloc -N2 runs its command here with the job's SLURM_* variables; srun in it runs
#     steps on the allocated nodes (a failing step said as Slurm says it); salloc exits with
#     the command's status, the job COMPLETED (FAILED with the command's code otherwise);
#   - srun outside a job makes its own allocation (-N2 -l: one labelled line per task), the
#     job COMPLETED and named after the program;
#   - srun's stdin goes to every task (-i0: task 0, --input=none: nowhere; the other
#     modes are srun_io.sh's); --pty gives task 0 a terminal,
#     which follows srun's terminal's size (SIGWINCH);
#     salloc from a terminal runs an interactive shell;
#   - salloc killed (SIGKILL): its job ends CANCELLED and its step's task is killed;
#   - scancel of a salloc job: salloc says it was revoked, its command is hung up; so does
#     scontrol requeue, which ends an allocation CANCELLED;
#   - a time limit: the job ends TIMEOUT under salloc, which says so;
#   - gschedd restarted under a salloc: the allocation ends CANCELLED;
#   - salloc -I1 and srun -I1 on a full cluster give up after a second, their jobs
#     CANCELLED; salloc --immediate=20 gets nodes that free meanwhile.
name="salloc"
. "$(dirname "$0")/lib.sh"

slurm_names salloc srun scancel scontrol
unset SLURM_JOB_ID SLURM_JOBID

start_cluster --workers 2 --topology "$src/tests/topologies/ws-4gpu.xml" --heartbeat 1s \
  --kill-grace 1s

has() {
  grep -Eq -- "$2" "$1" 2>/dev/null || fail "$1 has no line matching '$2'; it holds: $(cat "$1" 2>&1)"
}
# job_of FILE: the job id of salloc's "Granted job allocation N" line.
job_of() { sed -n 's/^salloc: Granted job allocation \([0-9]*\)$/\1/p' "$1" | head -1; }

# --- salloc -N2 with steps in it -----------------------------------------------------------
# shellcheck disable=SC2016 # the variables are the allocation's, expanded in it
salloc -N2 --ntasks-per-node=2 sh -c 'srun -l printenv SLURMD_NODENAME | sort; srun -n1 false;
  echo "JOB=$SLURM_JOB_ID NN=$SLURM_NNODES NT=$SLURM_NTASKS NL=$SLURM_JOB_NODELIST"' \
  > "$tmp/s1.out" 2> "$tmp/s1.err"
rc=$?
[ $rc = 0 ] || fail "salloc exited $rc: $(cat "$tmp/s1.out" "$tmp/s1.err")"
id=$(job_of "$tmp/s1.err")
[ -n "$id" ] || fail "no 'Granted job allocation' line: $(cat "$tmp/s1.err")"
has "$tmp/s1.out" '^0: node1$'
has "$tmp/s1.out" '^1: node1$'
has "$tmp/s1.out" '^2: node2$'
has "$tmp/s1.out" '^3: node2$'
has "$tmp/s1.out" "^JOB=$id NN=2 NT=4 NL=node\\[1-2\\]\$"
has "$tmp/s1.err" '^srun: error: node1: task 0: Exited with exit code 1$'
has "$tmp/s1.err" "^salloc: Relinquishing job allocation $id\$"
expect "$id" 'j["state"] == "COMPLETED"'
expect "$id" 'j["name"] == "sh"'

salloc -N1 sh -c 'exit 3' > /dev/null 2> "$tmp/s2.err"
rc=$?
[ $rc = 3 ] || fail "salloc of 'exit 3' exited $rc: $(cat "$tmp/s2.err")"
id=$(job_of "$tmp/s2.err")
expect "$id" 'j["state"] == "FAILED" and j["exit_code"] == 3'

# --- srun outside a job ----------------------------------------------------------------------
srun -N2 -l echo hi > "$tmp/r1.out" 2> "$tmp/r1.err" ||
  fail "srun -N2 outside a job failed: $(cat "$tmp/r1.out" "$tmp/r1.err")"
[ "$(sort "$tmp/r1.out" | tr '\n' ' ')" = "0: hi 1: hi " ] ||
  fail "srun -N2 -l echo hi printed: $(cat "$tmp/r1.out" "$tmp/r1.err")"
id=$("$bin/gsched" queue --all --json |
  python3 -c 'import json,sys; print([j["job_id"] for j in json.load(sys.stdin) if j["name"] == "echo"][-1])') ||
  fail "no job named echo in the queue"
wait_for "srun's job to end" 10 is "$id" 'j["state"] != "RUNNING"'
expect "$id" 'j["state"] == "COMPLETED"'
# Output that cannot be written (a full disk: /dev/full) is said, and fails srun.
srun -N1 echo lost > /dev/full 2> "$tmp/rf.err" && fail "srun writing to /dev/full succeeded"
has "$tmp/rf.err" "^srun: error: writing the tasks' output: No space left on device\$"
srun -N1 sh -c 'exit 5' 2> "$tmp/r2.err"
rc=$?
[ $rc = 5 ] || fail "srun of 'exit 5' outside a job exited $rc: $(cat "$tmp/r2.err")"
srun -N9 true > "$tmp/r3.err" 2>&1 && fail "srun -N9 on two nodes succeeded"
has "$tmp/r3.err" '^srun: error: Unable to allocate resources: '
salloc -N9 true > "$tmp/s3.err" 2>&1 && fail "salloc -N9 on two nodes succeeded"
has "$tmp/s3.err" '^salloc: error: Job submit/allocate failed: '
salloc --nodse=1 true > "$tmp/s4.err" 2>&1 && fail "salloc with an unknown option succeeded"
has "$tmp/s4.err" '^salloc: error: command line: --nodse=1: unknown option'

# --- stdin: srun's goes to every task, --pty runs task 0 under a terminal ------------------------
got=$(echo abc | srun -n1 cat 2> "$tmp/i1.err") || fail "echo abc | srun -n1 cat failed: $(cat "$tmp/i1.err")"
[ "$got" = abc ] || fail "echo abc | srun -n1 cat printed '$got': $(cat "$tmp/i1.err")"
got=$(printf 'x\ny\n' | srun -N2 -l cat 2> "$tmp/i2.err" | sort | tr '\n' ' ')
[ "$got" = "0: x 0: y 1: x 1: y " ] || fail "srun -N2 -l cat printed '$got': $(cat "$tmp/i2.err")"
got=$(printf 'x\ny\n' | srun -N2 -l -i0 cat 2> "$tmp/i4.err" | sort | tr '\n' ' ')
[ "$got" = "0: x 0: y " ] || fail "srun -N2 -l -i0 cat printed '$got': $(cat "$tmp/i4.err")"
got=$(echo abc | srun -n1 --input=none cat 2> "$tmp/i3.err")
[ -z "$got" ] || fail "srun --input=none passed stdin on: '$got'"
# srun --pty from a terminal of its own (python's pty module): task 0 sees a terminal, reads
# a line typed into srun's, and srun exits with its status.
python3 - "$src/tests/integration" > "$tmp/pty.out" 2>&1 <<'PY' || fail "srun --pty: $(cat "$tmp/pty.out")"
import os, sys
sys.path.insert(0, sys.argv[1])
import pty_drive
text, code, _ = pty_drive.run(
    ["srun", "--pty", "sh", "-c",
     'test -t 0 && test -t 1 && echo ISATTY; read x; echo "GOT:$x"; exit 7'],
    [(lambda out: True, lambda fd: os.write(fd, b"hello\n"))])
print(text)
sys.exit(0 if "ISATTY" in text and "GOT:hello" in text and code == 7 else 1)
PY

# srun --pty's terminal resized (SIGWINCH): task 0's terminal takes the new size. The task
# prints its size, reads a line typed after the resize, and prints its size again.
python3 - "$src/tests/integration" > "$tmp/winch.out" 2>&1 <<'PY' ||
  fail "srun --pty resize: $(cat "$tmp/winch.out"); the worker's log: $(tail -n 20 "$state"/workerd*.log 2>/dev/null)"
import fcntl, os, struct, sys, termios
sys.path.insert(0, sys.argv[1])
import pty_drive
def size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
def resize(fd):
    size(fd, 50, 132)  # the kernel sends srun SIGWINCH
    os.write(fd, b"go\n")
text, code, _ = pty_drive.run(
    ["srun", "--pty", "sh", "-c", 'echo "SIZE1 $(stty size)"; read x; echo "SIZE2 $(stty size)"'],
    [(lambda out: b"SIZE1 24 80" in out, resize)], before_exec=lambda: size(0, 24, 80))
print(text)
print("(srun's exit status: %s)" % code)
sys.exit(0 if "SIZE1 24 80" in text and "SIZE2 50 132" in text and code == 0 else 1)
PY

# salloc with no command from a terminal: an interactive $SHELL in the foreground, srun in
# it, its exit status salloc's.
printf '#!/bin/sh\nexec bash --norc --noprofile -i\n' > "$tmp/ishell"
chmod +x "$tmp/ishell"
SHELL=$tmp/ishell PS1='PROMPT> ' python3 - "$src/tests/integration" > "$tmp/ia.out" 2>&1 <<'PY' || fail "salloc: $(cat "$tmp/ia.out")"
import os, sys
sys.path.insert(0, sys.argv[1])
import pty_drive
# srun reads the terminal too (its stdin goes to task 0): exit is typed at the next prompt.
text, code, typed = pty_drive.run(
    ["salloc", "-N1"],
    [(lambda out: True, lambda fd: os.write(fd, b"srun -l echo in-$SLURM_NNODES\n")),
     (lambda out: b"PROMPT> " in out.partition(b"0: in-1")[2], lambda fd: os.write(fd, b"exit 4\n"))])
print(text)
sys.exit(0 if typed and "0: in-1" in text and "Relinquishing" in text and code == 4 else 1)
PY

# --- salloc killed: its job and its step end -------------------------------------------------
salloc -N1 srun sh -c "echo \$\$ > $tmp/k.pid; exec sleep 300" > /dev/null 2> "$tmp/k.err" &
salloc_pid=$!
wait_for "the step under salloc to start" 20 test -s "$tmp/k.pid"
id=$(job_of "$tmp/k.err")
task=$(cat "$tmp/k.pid")
echo "$task" >> "$tmp/tasks.pids"
kill -9 "$salloc_pid"
wait "$salloc_pid" 2>/dev/null
wait_for "job $id to leave RUNNING" 20 is "$id" 'j["state"] != "RUNNING"'
expect "$id" 'j["state"] == "CANCELLED"'
wait_for "the step's task (pid $task) to be killed" 20 eval "! pid_alive $task"

# --- scancel of a salloc job -------------------------------------------------------------------
salloc -N1 sh -c "echo started > $tmp/c.mark; sleep 300" > /dev/null 2> "$tmp/c.err" &
salloc_pid=$!
wait_for "salloc's command to start" 20 test -s "$tmp/c.mark"
id=$(job_of "$tmp/c.err")
scancel "$id" || fail "scancel $id failed"
wait_for "salloc to end after scancel" 20 eval "! pid_alive $salloc_pid"
wait "$salloc_pid"
rc=$?
[ $rc = 129 ] || fail "salloc under scancel exited $rc (not 128 + SIGHUP): $(cat "$tmp/c.err")"
has "$tmp/c.err" "^salloc: Job allocation $id has been revoked\\.\$"
expect "$id" 'j["state"] == "CANCELLED"'

# scontrol requeue only marks a job until its tasks end: an allocation has none, and is
# never requeued; the cron ends it CANCELLED.
salloc -N1 sh -c "echo started > $tmp/q.mark; sleep 300" > /dev/null 2> "$tmp/q.err" &
salloc_pid=$!
wait_for "salloc's command to start" 20 test -s "$tmp/q.mark"
id=$(job_of "$tmp/q.err")
scontrol requeue "$id" || fail "scontrol requeue $id failed"
wait_for "salloc to end after scontrol requeue" 20 eval "! pid_alive $salloc_pid"
wait "$salloc_pid" 2>/dev/null
has "$tmp/q.err" "^salloc: Job allocation $id has been revoked\\.\$"
expect "$id" 'j["state"] == "CANCELLED"'

# --- the time limit ----------------------------------------------------------------------------
salloc -N1 -t 0:02 sleep 300 > /dev/null 2> "$tmp/t.err"
rc=$?
[ $rc = 129 ] || fail "salloc past its time limit exited $rc: $(cat "$tmp/t.err")"
id=$(job_of "$tmp/t.err")
has "$tmp/t.err" "^salloc: Job $id has exceeded its time limit and its allocation has been revoked\\.\$"
expect "$id" 'j["state"] == "TIMEOUT"'

# --- -I, --immediate: not granted in time, given up ----------------------------------------------
{ echo "#!/bin/sh"; gate_wait full; } > "$work/full.sh"
full=$("$bin/gsched" sbatch --parsable -N2 --exclusive -o /dev/null "$work/full.sh") ||
  fail "the job filling the cluster"
wait_start "$full"
start_ms=$(date +%s%3N)
salloc -I1 -N1 true > /dev/null 2> "$tmp/i.err" && fail "salloc -I1 got a full cluster"
took=$(($(date +%s%3N) - start_ms))
has "$tmp/i.err" "^salloc: error: Unable to allocate resources: job [0-9]+ not granted within 1 second\\(s\\) \\(--immediate\\)\$"
[ "$took" -lt 10000 ] || fail "salloc -I1 gave up after $took ms"
id=$(sed -n 's/.*job \([0-9]*\) not granted.*/\1/p' "$tmp/i.err")
wait_for "job $id, given up, to end" 10 is "$id" 'j["state"] == "CANCELLED"'
srun -I1 -N1 true > /dev/null 2> "$tmp/i2.err" && fail "srun -I1 got a full cluster"
has "$tmp/i2.err" "^srun: error: Unable to allocate resources: job [0-9]+ not granted within 1 second"
salloc -I0 -N1 true > /dev/null 2> "$tmp/i3.err" && fail "salloc -I0 was taken"
has "$tmp/i3.err" "^salloc: error: -I0: the seconds to wait, 1 to 86400\$"
salloc --immediate=20 -N1 sh -c 'echo "GOT $SLURM_JOB_ID"' > "$tmp/i4.out" 2> "$tmp/i4.err" &
waiter=$!
wait_for "salloc --immediate=20 to wait" 10 grep -q "queued and waiting" "$tmp/i4.err"
gate full
wait "$waiter" || fail "salloc --immediate=20 did not get the freed nodes: $(cat "$tmp/i4.err")"
has "$tmp/i4.out" "^GOT [0-9]+\$"

# --- gschedd restarted under a salloc ----------------------------------------------------------
salloc -N1 sh -c "echo started > $tmp/g.mark; sleep 300" > /dev/null 2> "$tmp/g.err" &
salloc_pid=$!
wait_for "salloc's command to start" 20 test -s "$tmp/g.mark"
id=$(job_of "$tmp/g.err")
restart_sched 2
wait_for "salloc to end with gschedd gone" 20 eval "! pid_alive $salloc_pid"
wait "$salloc_pid" 2>/dev/null
wait_for "job $id to end after the restart" 20 is "$id" 'j["state"] == "CANCELLED"'
expect "$id" '"salloc was gone" in j["reason"]'

check_logs
# Under the sanitizer build salloc and srun report into the files their stderr went to.
if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp"/*.err "$tmp"/*.out; then
  fail "sanitizer report from salloc or srun"
fi
stop_cluster
echo "salloc: ok"
