#!/bin/bash
# run.sh BIN SRC: the sbatch corpus (tests/sbatch/scripts/) submitted end to end to a
# `gsched up` cluster of three nodes with the hardware of tests/topologies/ws-4gpu.xml
# (4 GPUs, 16 cores), as a user would: through
# `sbatch`, `srun`, `scontrol`, `squeue` and `sacct` links to gsched on PATH. Each script
# prints what it sees (SLURM_* variables, what srun launched where, via the stand-in
# launchers in tests/sbatch/bin/); the checks below assert on those lines, on the output
# files' names and on the jobs' states.
name=sbatch_corpus
# shellcheck source=../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"

corpus=$src/tests/sbatch
links=$tmp/bin
mkdir -p "$links"
for cmd in sbatch srun scontrol squeue sacct scancel sinfo; do
  ln -s "$bin/gsched" "$links/$cmd"
done
export PATH=$links:$corpus/bin:$PATH

start_cluster --workers 3 --topology "$src/tests/topologies/ws-4gpu.xml" --partition main:default --partition 'gpu=node[1-2]'
cp "$corpus/train.py" "$work/"

# sbatch_ok SCRIPT [ARGS...]: submits with --parsable from $work, prints the job id.
sbatch_ok() {
  local out
  out=$(sbatch --parsable "$corpus/scripts/$1" "${@:2}" 2> "$tmp/sbatch.err") ||
    fail "sbatch $1 refused: $out $(cat "$tmp/sbatch.err")"
  [[ $out =~ ^[0-9]+$ ]] || fail "sbatch $1 --parsable printed '$out'"
  echo "$out"
}

# has FILE REGEX: the file has a line matching the extended regex.
has() {
  grep -Eq -- "$2" "$1" 2>/dev/null || fail "$1 has no line matching '$2'; it holds: $(cat "$1" 2>&1)"
}

# count FILE REGEX: how many lines match.
count() { grep -Ec -- "$2" "$1" 2>/dev/null; }

completed() {
  wait_end "$1" 30 || true
  [ "$(job_state "$1")" = COMPLETED ] ||
    fail "job $1 ($2) did not complete: $(jq "$1" 'j') output: $(cat "$3" 2>&1)"
}

# --- torchrun across two nodes -------------------------------------------------------------
id=$(sbatch_ok torchrun-multinode.sh)
out=$work/llama-ft-$id.out
completed "$id" torchrun "$out"
has "$out" '^NODES=node[0-9] node[0-9] HEAD=node[0-9] NNODES=2 NTASKS=2$'
has "$out" "^JOB=$id NAME=llama-ft TPN=1\\(x2\\) CPT=4\$"
has "$out" "GPUS_ON_NODE=4 SUBMIT_DIR=$work\$"
head_node=$(sed -n 's/.*HEAD=\(node[0-9]\).*/\1/p' "$out")
[ "$(count "$out" '^LAUNCH torchrun ')" = 2 ] || fail "torchrun: not two launches: $(cat "$out")"
has "$out" "^LAUNCH torchrun host=$head_node procid=0 nodeid=0 localid=0 step=0 ntasks=2 gpus=0,1,2,3 args=--nnodes 2 --nproc_per_node 4 --rdzv_id $id --rdzv_backend c10d --rdzv_endpoint $head_node:29500 train.py"
has "$out" '^LAUNCH torchrun host=node[0-9] procid=1 nodeid=1 localid=0 step=0 '
has "$out" '^DONE$'

# --- an array sweep, two at a time -----------------------------------------------------------
mkdir -p "$work/logs"
id=$(sbatch_ok array-sweep.sh)
for t in 0 1 2 3 4 5; do
  wait_end $((id + t)) 30 || true
  f=$work/logs/sweep_${id}_$t.out
  [ "$(job_state $((id + t)))" = COMPLETED ] || fail "array element $t: $(jq $((id + t)) 'j')"
  has "$f" "^TASK=$t ARRAY=$id JOB=$((id + t)) COUNT=6 MIN=0 MAX=5 STEP=1 LR="
  has "$f" "^TRAIN .* args=--lr [0-9e-]+ --run-name sweep-$t\$"
  has "$work/logs/sweep_${id}_$t.err" '^to stderr$'
done
# At most two elements ran at any moment (the %2 throttle): sweep their start/end times.
cat "$work"/logs/times.* | sort -k2 -g | awk '
  $1 == "START" { n++; if (n > most) most = n }
  $1 == "END" { n-- }
  END { exit most > 2 }' || fail "more than two array elements ran at once: $(cat "$work"/logs/times.*)"

# --- accelerate on the gpu partition, with account and qos -----------------------------------
id=$(sbatch_ok accelerate.sh)
out=$work/accel.out
completed "$id" accelerate "$out"
has "$out" '^PARTITION=gpu ACCOUNT=nlp QOS=high GPN=2$'
has "$out" '^LAUNCH accelerate host=node[12] .* args=launch --num_machines 2 --num_processes 4 --machine_rank 0 --main_process_ip node[12] --main_process_port 29501 train.py'
has "$out" '^LAUNCH accelerate host=node[12] .*--machine_rank 1 '
[ "$(jq "$id" 'j["partition"]')" = gpu ] || fail "accelerate: partition is not gpu: $(jq "$id" 'j')"
sacct -j "$id" -P -n --format=JobID,Partition,Account,State,ExitCode > "$tmp/sacct.out" 2>&1 ||
  fail "sacct failed: $(cat "$tmp/sacct.out")"
has "$tmp/sacct.out" "^$id\\|gpu\\|nlp\\|COMPLETED\\|0:0\$"

# --- deepspeed's hostfile from the batch step --------------------------------------------------
id=$(sbatch_ok deepspeed.sh)
out=$work/ds-$id.out
completed "$id" deepspeed "$out"
[ "$(count "$out" '^node[0-9] slots=2$')" = 2 ] || fail "deepspeed hostfile: $(cat "$out")"
has "$out" "^LAUNCH deepspeed host=node[0-9] procid=0 .* args=--hostfile hostfile.$id --num_nodes 2 train.py --deepspeed ds_config.json\$"

# --- #SBATCH lines after the first command are ignored, with a warning -------------------------
id=$(sbatch_ok late-directives.sh)
grep -q 'warning' "$tmp/sbatch.err" || fail "late directives: no warning: $(cat "$tmp/sbatch.err")"
out=$work/slurm-$id.out
completed "$id" late-directives "$out"
has "$out" '^NNODES=1$'
has "$out" '^GPUS_ON_NODE=1$'

# --- quoted values with spaces, script arguments, tasks of one node ----------------------------
mkdir -p "$work/out dir" # sbatch, like Slurm, does not make the output's directory
id=$(sbatch_ok spaces.sh "run 7")
out="$work/out dir/bert large.$id.log"
completed "$id" spaces "$out"
has "$out" '^NAME=bert large NTASKS=3 ARGS=run 7$'
[ "$(count "$out" '^TRAIN .* args=--tag run 7$')" = 3 ] || fail "spaces: not three tasks: $(cat "$out")"
for r in 0 1 2; do has "$out" "^TRAIN host=node[0-9] procid=$r localid=$r step=0 "; done

# --- parameters on stdin (--input), --wckey, --mincpus, --tmp -------------------------------------
printf '0.1 0.01\n0.3 0.0\n' > "$work/params.txt"
id=$(sbatch_ok stdin-params.sh)
out=$work/params-$id.out
completed "$id" stdin-params "$out"
has "$out" '^RUN lr=0.1 wd=0.01$'
has "$out" '^RUN lr=0.3 wd=0.0$'
has "$out" '^CPN=2$'
[ "$(sacct -n -X -P -j "$id" -o WCKey)" = sweeps ] || fail "WCKey: $(sacct -n -X -P -j "$id" -o WCKey)"
# A missing input file fails the job, naming the file.
printf '#!/bin/bash\n#SBATCH --input=absent.txt\ncat\n' > "$work/absent.sh"
id=$(sbatch --parsable -o /dev/null "$work/absent.sh" 2>&1) || fail "sbatch absent.sh: $id"
wait_end "$id" 30 || true
[ "$(job_state "$id")" = FAILED ] || fail "a missing --input file: $(jq "$id" 'j')"
jq "$id" 'j["reason"]' | grep -q "open stdin $work/absent.txt: No such file" ||
  fail "the reason does not name the file: $(jq "$id" 'j["reason"]')"

# --- one GPU per task ----------------------------------------------------------------------------
id=$(sbatch_ok gpus-per-task.sh)
out=$work/gpt-$id.out
completed "$id" gpus-per-task "$out"
[ "$(sed -n 's/^TRAIN .* gpus=\([0-9]*\) args=.*/\1/p' "$out" | sort -u | wc -l)" = 4 ] ||
  fail "gpus-per-task: four tasks with one distinct GPU each expected: $(cat "$out")"

# --- checkpoint on --signal, requeue, resume -----------------------------------------------------
id=$(sbatch_ok requeue-signal.sh)
wait_for "the requeued run" 40 grep -q RESUMED "$work/ckpt.marks"
completed "$id" requeue-signal "$work/ckpt.out"
has "$work/ckpt.marks" '^RUN restart=0$'
has "$work/ckpt.marks" '^USR1 checkpoint$'
has "$work/ckpt.marks" '^RUN restart=1$'
[ "$(jq "$id" 'j["restart_count"]')" = 1 ] || fail "requeue: restart count: $(jq "$id" 'j')"

# --- squeue and scancel on a running job ----------------------------------------------------------
printf '#!/bin/sh\n#SBATCH -J held-open -N 2\n%s\n' "$(gate_wait sq)" > "$work/open.sh"
id=$(sbatch --parsable "$work/open.sh") || fail "sbatch open.sh"
wait_start "$id"
squeue -j "$id" -h -o '%i %j %t %D %N' > "$tmp/squeue.out" 2>&1 || fail "squeue: $(cat "$tmp/squeue.out")"
has "$tmp/squeue.out" "^$id held-open R 2 node\\[[0-9][-,][0-9]\\]\$"
scancel "$id" || fail "scancel $id failed"
wait_end "$id" 30 || true
[ "$(job_state "$id")" = CANCELLED ] || fail "scancel: $(jq "$id" 'j')"

# --- scancel -b: the batch shell gets the signal, its srun step does not -------------------------
cat > "$work/batch-sig.sh" << 'EOF'
#!/bin/bash
#SBATCH -J batch-sig -N 1 -o batch-sig.out
trap 'echo BATCH_USR1 >> sig.marks' USR1
srun sh -c 'trap "echo STEP_USR1 >> sig.marks" USR1; echo STEP_READY >> sig.marks
  while [ ! -e sig.gate ]; do sleep 0.1; done' &
while [ ! -e sig.gate ]; do sleep 0.1; done
wait
echo BATCH_DONE >> sig.marks
EOF
id=$(sbatch --parsable "$work/batch-sig.sh") || fail "sbatch batch-sig.sh"
wait_for "the srun step of batch-sig" 30 grep -q STEP_READY "$work/sig.marks"
scancel -b -s USR1 "$id" || fail "scancel -b -s USR1 $id failed"
wait_for "the batch shell's trap" 30 grep -q BATCH_USR1 "$work/sig.marks"
touch "$work/sig.gate"
completed "$id" batch-sig "$work/batch-sig.out"
has "$work/sig.marks" '^BATCH_DONE$'
[ "$(count "$work/sig.marks" '^STEP_USR1$')" = 0 ] || fail "scancel -b reached the step: $(cat "$work/sig.marks")"
scontrol show job "$id" > "$tmp/scontrol.out" 2>&1 || fail "scontrol show job: $(cat "$tmp/scontrol.out")"
has "$tmp/scontrol.out" "Command=$work/batch-sig.sh\$"

# --- -M: a script written for several clusters runs here when it names this one ------------------
id=$(sbatch --parsable -M other,gsched -o /dev/null --wrap true 2>&1) || fail "-M other,gsched: $id"
completed "$id" clusters /dev/null
before=$(queue_count)
if out=$(sbatch -M other --wrap true 2>&1); then fail "-M other was accepted: $out"; fi
case $out in *"clusters: no cluster 'other' here (this one is 'gsched')"*) ;; *) fail "-M other: $out" ;; esac
[ "$(queue_count)" = "$before" ] || fail "-M other left a job behind"

# --- a bad directive submits nothing ---------------------------------------------------------------
before=$(queue_count)
printf '#!/bin/sh\n#SBATCH --nodse=2\necho hi\n' > "$work/typo.sh"
if sbatch "$work/typo.sh" > "$tmp/typo.out" 2>&1; then fail "a typo was accepted: $(cat "$tmp/typo.out")"; fi
has "$tmp/typo.out" 'typo.sh:2: .*--nodse'
[ "$(queue_count)" = "$before" ] || fail "a refused script left a job behind"

check_logs
echo "$name: all checks passed"
