#!/usr/bin/env bash
# srun_io.sh BIN_DIR SRC_DIR: srun's IO redirection (-i/-o/-e), as Slurm's "IO Redirection",
# end to end on a `gsched up` cluster of two workers, srun outside a job (its own allocation,
# talking to gschedd itself) and inside a batch job (through its worker's relay):
#   - stdin goes to every task by default, to one with -i N, to none with -i none; -i FILE
#     gives each task its own file (%t), opened where the task runs, one that is missing
#     failing that task only; -i N beyond the step's tasks is refused;
#   - -o/-e: none, a task id (that task's lines only), FILE patterns (%t one file per task,
#     %N one per node, %j %s), -o alone taking stderr too, --open-mode=append;
#   - nothing of srun's stdin is lost to a task that reads slowly: 24 MiB through a task
#     that reads nothing for a second, on both nodes at once (the workers hold 1 MiB per
#     task: srun keeps within what they took), inside a batch job too;
#   - a task that stops reading (head -1 of yes) lets srun stop reading and end;
#   - nothing of the tasks' output is lost to a slow reader of srun's: 96 MiB (more than
#     gschedd queues for srun, 64 MiB) through a pipe that reads nothing for 2 s, the task
#     held by the workers' output window meanwhile, inside a batch job too.
name="srun_io"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun
unset SLURM_JOB_ID SLURM_JOBID

start_cluster --workers 2 --topology "$src/tests/topologies/ws-4gpu.xml" --heartbeat 1s \
  --kill-grace 1s

has() {
  grep -Eq -- "$2" "$1" 2>/dev/null || fail "$1 has no line matching '$2'; it holds: $(cat "$1" 2>&1)"
}
# lines FILE: its lines sorted, on one line.
lines() { sort "$1" | tr '\n' ' '; }

# --- stdin -------------------------------------------------------------------------------------
printf 'a\nb\n' | srun -N2 -n4 -l cat > "$tmp/all.out" 2> "$tmp/all.err" ||
  fail "srun -n4 cat failed: $(cat "$tmp/all.err")"
[ "$(lines "$tmp/all.out")" = "0: a 0: b 1: a 1: b 2: a 2: b 3: a 3: b " ] ||
  fail "stdin did not reach every task: $(cat "$tmp/all.out" "$tmp/all.err")"
# shellcheck disable=SC2016 # the task's variables
printf 'z\n' | srun -N2 -n4 -l -i 2 sh -c 'cat; echo "end $SLURM_PROCID"' > "$tmp/one.out" \
  2> "$tmp/one.err" || fail "srun -i 2 failed: $(cat "$tmp/one.err")"
[ "$(lines "$tmp/one.out")" = "0: end 0 1: end 1 2: end 2 2: z 3: end 3 " ] ||
  fail "srun -i 2: $(cat "$tmp/one.out" "$tmp/one.err")"
printf 'z\n' | srun -N2 -n4 -i none cat > "$tmp/none.out" 2> "$tmp/none.err" ||
  fail "srun -i none failed: $(cat "$tmp/none.err")"
[ ! -s "$tmp/none.out" ] || fail "srun -i none passed stdin on: $(cat "$tmp/none.out")"
echo z | srun -N2 -n4 -i 4 cat > "$tmp/beyond.out" 2> "$tmp/beyond.err" &&
  fail "srun -n4 -i 4 succeeded"
has "$tmp/beyond.err" '^srun: error: Unable to create step for job [0-9]+: --input=4: the step has 4 tasks \(0-3\)$'
srun -i 'in-%q' true > "$tmp/badpat.out" 2>&1 && fail "an unknown placeholder in -i was taken"
has "$tmp/badpat.out" "^srun: error: --input=in-%q: unknown placeholder '%q'"

mkdir -p "$work/in"
for t in 0 1 2 3; do echo "file of $t" > "$work/in/in-$t.txt"; done
srun -N2 -n4 -l -D "$work/in" -i 'in-%t.txt' cat > "$tmp/file.out" 2> "$tmp/file.err" ||
  fail "srun -i in-%t.txt failed: $(cat "$tmp/file.err")"
[ "$(lines "$tmp/file.out")" = "0: file of 0 1: file of 1 2: file of 2 3: file of 3 " ] ||
  fail "srun -i in-%t.txt: $(cat "$tmp/file.out" "$tmp/file.err")"
rm "$work/in/in-3.txt"
srun -N2 -n4 -l -D "$work/in" -i 'in-%t.txt' cat > "$tmp/miss.out" 2> "$tmp/miss.err" &&
  fail "srun -i with a missing file succeeded"
has "$tmp/miss.err" "task 3: could not start: open stdin $work/in/in-3.txt: No such file or directory"
has "$tmp/miss.out" '^2: file of 2$'

# --- stdout and stderr -------------------------------------------------------------------------
# shellcheck disable=SC2016
task_lines='echo "out $SLURM_PROCID"; echo "err $SLURM_PROCID" >&2'
mkdir -p "$work/out"
srun -N2 -n4 -D "$work/out" -o 'o-%j-%s-%t.txt' sh -c "$task_lines" > "$tmp/f.out" 2> "$tmp/f.err" ||
  fail "srun -o o-%t.txt failed: $(cat "$tmp/f.err")"
[ ! -s "$tmp/f.out" ] || fail "srun -o FILE still printed: $(cat "$tmp/f.out")"
n=$(find "$work/out" -name 'o-*-0-*.txt' | wc -l)
[ "$n" = 4 ] || fail "srun -o o-%j-%s-%t.txt wrote $n files: $(ls "$work/out")"
for t in 0 1 2 3; do
  f=$(find "$work/out" -name "o-*-0-$t.txt")
  [ "$(lines "$f")" = "err $t out $t " ] || fail "$f holds: $(cat "$f")"
done
srun -N2 -n4 -D "$work/out" -o 'n-%N.txt' -e none sh -c "$task_lines" 2> "$tmp/n.err" ||
  fail "srun -o n-%N.txt failed: $(cat "$tmp/n.err")"
[ "$(lines "$work/out/n-node1.txt")" = "out 0 out 1 " ] || fail "n-node1.txt: $(cat "$work/out/n-node1.txt")"
[ "$(lines "$work/out/n-node2.txt")" = "out 2 out 3 " ] || fail "n-node2.txt: $(cat "$work/out/n-node2.txt")"
srun -N2 -n4 -D "$work/out" -o 'n-%N.txt' --open-mode=append -e none sh -c "$task_lines" \
  2> "$tmp/na.err" || fail "srun --open-mode=append failed: $(cat "$tmp/na.err")"
[ "$(wc -l < "$work/out/n-node1.txt")" = 4 ] || fail "appended: $(cat "$work/out/n-node1.txt")"
srun -N2 -n4 -o 1 sh -c "$task_lines" > "$tmp/o1.out" 2> "$tmp/o1.err" ||
  fail "srun -o 1 failed: $(cat "$tmp/o1.err")"
[ "$(cat "$tmp/o1.out")" = "out 1" ] || fail "srun -o 1 printed: $(cat "$tmp/o1.out")"
has "$tmp/o1.err" '^err 1$'
[ "$(grep -c '^err' "$tmp/o1.err")" = 1 ] || fail "srun -o 1 let other tasks' stderr out: $(cat "$tmp/o1.err")"
srun -N2 -n4 -o none -e 3 sh -c "$task_lines" > "$tmp/e3.out" 2> "$tmp/e3.err" ||
  fail "srun -o none -e 3 failed: $(cat "$tmp/e3.err")"
[ ! -s "$tmp/e3.out" ] || fail "srun -o none printed: $(cat "$tmp/e3.out")"
[ "$(grep '^err' "$tmp/e3.err")" = "err 3" ] || fail "srun -e 3: $(cat "$tmp/e3.err")"

# --- flow: a slow reader loses nothing ---------------------------------------------------------
head -c $((24 << 20)) /dev/urandom > "$work/big"
want=$(md5sum < "$work/big" | cut -d' ' -f1)
# shellcheck disable=SC2016
srun -N2 -n2 -l sh -c 'sleep 1; md5sum' < "$work/big" > "$tmp/big.out" 2> "$tmp/big.err" ||
  fail "srun of 24 MiB failed: $(cat "$tmp/big.err")"
[ "$(lines "$tmp/big.out")" = "0: $want  - 1: $want  - " ] ||
  fail "24 MiB through slow readers: $(cat "$tmp/big.out" "$tmp/big.err") (want $want)"
# A task that stops reading: srun stops reading too and ends with the step.
yes | srun -N2 -n2 head -1 > "$tmp/yes.out" 2> "$tmp/yes.err" || fail "yes | srun head -1: $(cat "$tmp/yes.err")"
[ "$(lines "$tmp/yes.out")" = "y y " ] || fail "yes | srun head -1 printed: $(cat "$tmp/yes.out")"

# A slow reader of srun's output: the task waits for it, nothing is dropped.
head -c $((96 << 20)) /dev/urandom > "$work/out96"
want96=$(md5sum < "$work/out96" | cut -d' ' -f1)
got=$(srun -N1 -n1 cat "$work/out96" 2> "$tmp/out96.err" | (sleep 2; md5sum) | cut -d' ' -f1)
[ "$got" = "$want96" ] || fail "96 MiB of output through a slow reader: $got, want $want96: $(cat "$tmp/out96.err")"
[ ! -s "$tmp/out96.err" ] || fail "srun said, with a slow reader: $(cat "$tmp/out96.err")"

# Inside a batch job srun talks through its worker's relay: the same, 8 MiB in, 96 MiB out.
head -c $((8 << 20)) /dev/urandom > "$work/mid"
want=$(md5sum < "$work/mid" | cut -d' ' -f1)
printf '#!/bin/sh\n#SBATCH -N2 -n2 -o %s/batch.out\nsrun -l sh -c "sleep 1; md5sum" < %s/mid\nsrun -N1 -n1 cat %s/out96 | (sleep 2; md5sum)\n' \
  "$work" "$work" "$work" > "$work/batch.sh"
id=$(sbatch --parsable "$work/batch.sh" 2>&1) || fail "sbatch refused: $id"
wait_end "$id" 60 || fail "the batch job did not end: $(cat "$work/batch.out")"
[ "$(job_state "$id")" = COMPLETED ] || fail "batch job: $(jq "$id" 'j') output: $(cat "$work/batch.out")"
[ "$(lines "$work/batch.out")" = "$(printf '%s\n' "0: $want  -" "1: $want  -" "$want96  -" | sort | tr '\n' ' ')" ] ||
  fail "8 MiB in and 96 MiB out through the relay: $(cat "$work/batch.out") (want $want, $want96)"

check_logs
if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp"/*.err "$tmp"/*.out; then
  fail "sanitizer report from srun"
fi
stop_cluster
echo "srun_io: ok"
