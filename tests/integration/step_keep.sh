#!/usr/bin/env bash
# step_keep.sh BIN_DIR SRC_DIR: srun steps outlive gschedd. On a two-worker `gsched up`
# cluster a batch job runs a three-task step over both nodes (srun -l); each task prints a
# line and task 2 exits 5, then gschedd is killed (SIGKILL, as a crash). While it is down
# task 1 exits 3 and task 0 prints 3000 numbered lines. gschedd comes back: srun reattaches
# (it says so) and the step goes on; task 0 prints a last line and exits. srun's output then
# holds every line exactly once, in order, both failures as Slurm says them, and srun exits
# 5; sacct shows the step FAILED with 5:0 and its job COMPLETED. A second srun in the same
# job, after the restart, is numbered 1: step numbers go on from before the restart.
# Then a step waiting for the cores another step holds while gschedd is killed and started
# again: its srun sends the request again and the step runs once, after the other.
# Then srun's stdin in flight when gschedd is killed (stopped first, so that what srun sent
# is lost with it): srun sends it again after reattaching, and the task, which had read the
# first part before, gets every byte once.
# Then a PMI fence under way (srun --mpi=pmi2, a client speaking PMI-1 over PMI_FD): rank 0
# on one node enters a barrier, gschedd is killed and started again, then rank 1 on the
# other node enters it: the barrier completes for both (its worker sent rank 0's part
# again when it registered).
# Then a worker killed under a step and started again, without the task it ran: gschedd
# ends that task LOST when the worker registers, and srun says so and exits 1.
name="step_keep"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun sacct

start_cluster --workers 2 --heartbeat 1s --kill-grace 1s

# has_lines PATTERN N: $out has N lines matching PATTERN (for wait_for).
has_lines() { [ "$(grep -c -- "$1" "$out" 2>/dev/null)" = "$2" ]; }
# kill_sched: gschedd killed (SIGKILL, as a crash) and gone; start_sched: started again.
kill_sched() {
  local sched
  sched=$(cat "$state/gschedd.pid")
  kill -KILL "$sched"
  wait_for "gschedd (pid $sched) to die" 10 eval "! pid_alive $sched"
}
start_sched() {
  local up
  up=$("$bin/gsched" up --state "$state" --workers 2 2>&1) || fail "up after gschedd died: $up"
}

cat > "$work/task.sh" <<EOF
#!/bin/bash
echo "before \$SLURM_PROCID"
if [ "\$SLURM_PROCID" = 2 ]; then exit 5; fi
$(gate_wait down)
if [ "\$SLURM_PROCID" = 1 ]; then exit 3; fi
seq 1 3000 | sed 's/^/line /'
touch $tmp/lines.done
$(gate_wait end)
echo "after \$SLURM_PROCID"
EOF
cat > "$work/keep.sh" <<EOF
#!/bin/bash
#SBATCH -J keep
#SBATCH -o $work/keep.out
#SBATCH -N 2
#SBATCH -n 3
srun -l bash $work/task.sh
echo "STEP_RC=\$?"
srun -N1 -n1 true
echo "NEXT_RC=\$?"
EOF
id=$(sbatch --parsable "$work/keep.sh" 2>&1) || fail "sbatch keep.sh refused: $id"
out=$work/keep.out
wait_for "the tasks to say they run" 30 has_lines ': before ' 3
wait_for "task 2's exit" 30 grep -q 'task 2: Exited with exit code 5$' "$out"

kill_sched
gate down
wait_for "task 0 to print its lines while gschedd is down" 30 test -e "$tmp/lines.done"
start_sched
wait_for "srun to reattach" 60 grep -q '^srun: reattached to StepId=' "$out"
gate end
wait_end "$id" 60 || true
[ "$(job_state "$id")" = COMPLETED ] || fail "job: $(jq "$id" 'j') output: $(cat "$out")"

grep -q "^srun: lost the connection to gschedd; reattaching to StepId=$id\\.0\$" "$out" ||
  fail "srun did not say it lost gschedd: $(cat "$out")"
grep -q '^STEP_RC=5$' "$out" || fail "srun's status: $(cat "$out")"
grep -q '^NEXT_RC=0$' "$out" || fail "the step after the restart: $(cat "$out")"
grep -Eq '^srun: error: node[12]: task 1: Exited with exit code 3$' "$out" ||
  fail "task 1's failure: $(cat "$out")"
python3 - "$out" <<'PY' || fail "task 0's output across the restart: $(cat "$out")"
import sys
lines = [l.rstrip("\n") for l in open(sys.argv[1])]
zero = [l[3:] for l in lines if l.startswith("0: ")]
want = ["before 0"] + ["line %d" % i for i in range(1, 3001)] + ["after 0"]
assert zero == want, (len(zero), [z for z in zero if z not in want][:5], zero[:3], zero[-3:])
assert [l for l in lines if l.startswith("1: ")] == ["1: before 1"], lines
assert [l for l in lines if l.startswith("2: ")] == ["2: before 2"], lines
assert len([l for l in lines if l.endswith("task 2: Exited with exit code 5")]) == 1, lines
PY
rows=$(sacct -j "$id" -P -n -o JobID,State,ExitCode) || fail "sacct -j $id: $rows"
[ "$rows" = "$(printf '%s\n' "$id|COMPLETED|0:0" "$id.batch|COMPLETED|0:0" "$id.0|FAILED|5:0" \
  "$id.1|COMPLETED|0:0")" ] || fail "sacct -j $id: $rows"
# --- a step waiting for resources across a restart: srun asks again, the step runs once ----------
cat > "$work/wait.sh" <<EOF
#!/bin/bash
#SBATCH -J wait
#SBATCH -o $work/wait.out
#SBATCH -N 1
#SBATCH -n 2
srun -n2 bash -c 'touch $tmp/held.\$SLURM_PROCID; $(gate_wait held)' &
for i in \$(seq 300); do [ -e $tmp/held.0 ] && [ -e $tmp/held.1 ] && break; sleep 0.1; done
srun -n1 bash -c 'echo "ran \$SLURM_STEP_ID"'
echo "WAITED_RC=\$?"
wait
echo "HELD_RC=\$?"
EOF
id=$(sbatch --parsable "$work/wait.sh" 2>&1) || fail "sbatch wait.sh refused: $id"
out=$work/wait.out
wait_for "the second step to wait" 30 grep -q 'step creation temporarily disabled' "$out"
kill_sched
wait_for "srun to lose gschedd" 30 grep -q "^srun: lost the connection to gschedd; sending the step's request again\$" "$out"
start_sched
wait_for "the holding step's srun to reattach" 60 grep -q '^srun: reattached to StepId=' "$out"
gate held
wait_end "$id" 60 || true
[ "$(job_state "$id")" = COMPLETED ] || fail "wait job: $(jq "$id" 'j') output: $(cat "$out")"
grep -q '^WAITED_RC=0$' "$out" || fail "the waiting srun's status: $(cat "$out")"
grep -q '^HELD_RC=0$' "$out" || fail "the holding srun's status: $(cat "$out")"
[ "$(grep -c '^ran ' "$out")" = 1 ] && grep -q '^ran 1$' "$out" ||
  fail "the waiting step did not run once, as step 1: $(cat "$out")"
[ "$(grep -c 'step creation temporarily disabled' "$out")" = 1 ] ||
  fail "srun said it waits more than once: $(cat "$out")"
rows=$(sacct -j "$id" -P -n -o JobID,State) || fail "sacct -j $id: $rows"
[ "$rows" = "$(printf '%s\n' "$id|COMPLETED" "$id.batch|COMPLETED" "$id.0|COMPLETED" \
  "$id.1|COMPLETED")" ] || fail "sacct -j $id: $rows"
# --- srun's stdin in flight across a restart: sent again, each byte reaches the task once --------
head -c 700000 /dev/urandom > "$work/in.bin"
want=$(md5sum < "$work/in.bin" | cut -d' ' -f1)
mkfifo "$work/in.fifo"
exec 5<> "$work/in.fifo" # held open both ways: srun's open does not wait, and no EOF comes yet
cat > "$work/reader.sh" <<EOF
#!/bin/bash
dd bs=300000 count=1 iflag=fullblock of=$tmp/part1 2> /dev/null
touch $tmp/got1
$(gate_wait input)
cat > $tmp/part2
EOF
cat > "$work/input.sh" <<EOF
#!/bin/bash
#SBATCH -J input
#SBATCH -o $work/input.out
#SBATCH -N 1
#SBATCH -n 1
srun bash $work/reader.sh < $work/in.fifo
echo "INPUT_RC=\$?"
EOF
id=$(sbatch --parsable "$work/input.sh" 2>&1) || fail "sbatch input.sh refused: $id"
out=$work/input.out
head -c 300000 "$work/in.bin" >&5
wait_for "the task to read the first part" 30 test -e "$tmp/got1"
sched=$(cat "$state/gschedd.pid")
kill -STOP "$sched"
tail -c +300001 "$work/in.bin" >&5
# fifo_empty: srun has read all that was written into the FIFO (fd 5 is its other end)
fifo_empty() { python3 -c 'import array, fcntl, termios; b = array.array("i", [0]); fcntl.ioctl(5, termios.FIONREAD, b); assert b[0] == 0'; }
wait_for "srun to read the rest" 30 fifo_empty
exec 5>&- # srun's stdin ends
kill_sched
start_sched
wait_for "srun to reattach" 60 grep -q '^srun: reattached to StepId=' "$out"
gate input
wait_end "$id" 60 || true
grep -q '^INPUT_RC=0$' "$out" || fail "the reading srun's status: $(cat "$out")"
got=$(cat "$tmp/part1" "$tmp/part2" | md5sum | cut -d' ' -f1)
[ "$got" = "$want" ] ||
  fail "the task's stdin: $(stat -c %s "$tmp/part1" "$tmp/part2" | tr '\n' ' ')bytes, not the 700000 sent"
# --- a PMI fence under way across a restart: the workers send their parts again --------------
cat > "$work/pmi_client.py" <<'EOF'
import os, sys, time
fd, rank, tmp = int(os.environ["PMI_FD"]), os.environ["PMI_RANK"], sys.argv[1]
def ask(line):
    os.write(fd, (line + "\n").encode())
    got = b""
    while not got.endswith(b"\n"):
        b = os.read(fd, 1)
        if not b:
            sys.exit("PMI_FD closed")
        got += b
    return got.decode().strip()
print("init", ask("cmd=init pmi_version=1 pmi_subversion=1"), flush=True)
if rank == "1":
    for _ in range(600):
        if os.path.exists(tmp + "/gates/fence"):
            break
        time.sleep(0.05)
os.write(fd, b"cmd=barrier_in\n")
open("%s/barrier.%s" % (tmp, rank), "w").close()
got = b""
while not got.endswith(b"\n"):
    got += os.read(fd, 1)
print("rank", rank, got.decode().strip(), flush=True)
EOF
cat > "$work/fence.sh" <<EOF
#!/bin/bash
#SBATCH -J fence
#SBATCH -o $work/fence.out
#SBATCH -N 2
#SBATCH -n 2
srun --mpi=pmi2 -n2 python3 $work/pmi_client.py $tmp
echo "FENCE_RC=\$?"
EOF
id=$(sbatch --parsable "$work/fence.sh" 2>&1) || fail "sbatch fence.sh refused: $id"
out=$work/fence.out
wait_for "rank 0 to enter the barrier" 30 test -e "$tmp/barrier.0"
kill_sched
start_sched
wait_for "the fence's srun to reattach" 60 grep -q '^srun: reattached to StepId=' "$out"
gate fence
wait_end "$id" 60 || true
grep -q '^FENCE_RC=0$' "$out" || fail "the fence step's srun: $(cat "$out")"
[ "$(grep -c '^rank [01] cmd=barrier_out rc=0$' "$out")" = 2 ] ||
  fail "the barrier did not complete on both nodes: $(cat "$out")"
# --- a worker restarted under a step: its task there ends, srun hears why -----------------------
cat > "$work/lost.sh" <<EOF
#!/bin/bash
#SBATCH -J lost
#SBATCH -o $work/lost.out
#SBATCH -N 2
#SBATCH -n 2
srun -l bash -c 'echo "up \$SLURMD_NODENAME"; $(gate_wait lost)'
echo "LOST_RC=\$?"
EOF
id=$(sbatch --parsable "$work/lost.sh" 2>&1) || fail "sbatch lost.sh refused: $id"
out=$work/lost.out
wait_for "both tasks to run" 30 has_lines ': up ' 2
other=$(sed -n 's/^1: up //p' "$out")
[[ $other =~ ^node[12]$ ]] || fail "task 1's node: $(cat "$out")"
pid=$(cat "$state/$other.pid")
mapfile -d '' cmd < "/proc/$pid/cmdline"
kill -KILL "$pid"
wait_for "$other's worker to die" 10 eval "! pid_alive $pid"
(cd / && exec "${cmd[@]}" >> "$state/$other.log" 2>&1) &
echo $! > "$state/$other.pid"
wait_for "srun to hear of task 1" 30 grep -q 'task 1: ' "$out"
gate lost
wait_end "$id" 30 || true
grep -q '^LOST_RC=1$' "$out" || fail "srun's status: $(cat "$out")"
grep -q "^srun: error: $other: task 1: lost: node $other: its worker no longer runs the task\$" "$out" ||
  fail "srun did not say why task 1 ended: $(cat "$out")"
check_logs
echo "$name: all checks passed"
