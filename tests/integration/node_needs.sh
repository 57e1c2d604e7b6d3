#!/usr/bin/env bash
# node_needs.sh BIN_DIR SRC_DIR: what each node must give a job, on a two-worker `gsched up`
# cluster: sbatch --mincpus and --overcommit (the cores each node gives, as
# SLURM_JOB_CPUS_PER_NODE says), the submitting shell's limits (--propagate), then nodes'
# temporary disk (Slurm's TmpDisk) and --tmp, a node feature preferred (--prefer). Each worker reports the size of its worker.tmp_fs (/tmp);
# node2 is restarted with --tmp-fs /proc, a file system of no blocks, so it has none.
# scontrol show node and sinfo %d say both sizes; while node1 is held, a job asking --tmp
# waits while one queued after it takes node2, then runs on node1; two nodes of it are
# refused at submit, more than any node has is refused naming the field, and squeue %d /
# scontrol show job say what a job asked for (and squeue %w its --wckey).
name="node_needs"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun scontrol sinfo squeue

start_cluster --workers 2 --heartbeat 1s --topology "$src/tests/topologies/ws-4gpu.xml"

# output_of NAME WRAP SBATCH-OPTIONS...: runs --wrap WRAP as a job, waits, prints its output.
output_of() {
  local name=$1 wrap=$2 id
  shift 2
  id=$(sbatch_id "$@" -o "$work/$name.out" --wrap "$wrap")
  wait_end "$id" 30 || fail "$name: $(jq "$id" 'j')"
  cat "$work/$name.out"
}

# --mincpus: one task of one CPU gets 3 cores; -O: four tasks of 2 CPUs share one task's 2.
cpus_of() { # cpus_of NAME SBATCH-OPTIONS...: the job's SLURM_JOB_CPUS_PER_NODE and _OVERCOMMIT
  output_of "$1" 'echo "CPN=$SLURM_JOB_CPUS_PER_NODE OC=${SLURM_OVERCOMMIT:-}"' "${@:2}"
}
[ "$(cpus_of mincpus -n 1 --mincpus=3)" = "CPN=3 OC=" ] || fail "--mincpus=3: $(cat "$work/mincpus.out")"
[ "$(cpus_of plain -n 4 -c 2)" = "CPN=8 OC=" ] || fail "-n 4 -c 2: $(cat "$work/plain.out")"
[ "$(cpus_of over -n 4 -c 2 -O)" = "CPN=2 OC=1" ] || fail "-O: $(cat "$work/over.out")"
# --hint=nomultithread: one hardware thread of each core, said as Slurm says it; its steps
# keep it unless srun says otherwise (the workers log what they bind each task to: 0 is
# every thread).
steps='echo "TPC=$SLURM_THREADS_PER_CORE"; srun -n1 -J keep true
srun -n1 -J two --threads-per-core=2 bash -c '"'"'echo "TWO=$SLURM_THREADS_PER_CORE"'"'"'
srun -n1 -J all --hint=multithread bash -c '"'"'echo "ALL=${SLURM_THREADS_PER_CORE:-unset}"'"'"''
tpc_job=$(sbatch_id --hint=nomultithread -o "$work/tpc.out" --wrap "$steps")
wait_end "$tpc_job" 30 || fail "tpc: $(jq "$tpc_job" 'j')"
[ "$(tr '\n' ' ' < "$work/tpc.out")" = "TPC=1 TWO=2 ALL=unset " ] ||
  fail "--hint=nomultithread: $(cat "$work/tpc.out")"
# (The workers number the batch shell step 0, srun's steps from 1.)
for want in "step=0 .*batch=1 threads_per_core=1 " "step=1 .*batch=0 threads_per_core=1 " \
  "step=2 .*threads_per_core=2 " "step=3 .*threads_per_core=0 "; do
  grep -qE "job=$tpc_job $want" "$state"/*.log ||
    fail "no task started with '$want' in the workers' logs: $(grep "job=$tpc_job " "$state"/*.log)"
done

# --propagate: the submitting shell's soft limits reach the batch shell and its srun steps;
# without it the tasks keep the worker's.
stack_of() { # stack_of NAME SBATCH-OPTIONS...: the soft stack limits the job and its step saw
  (ulimit -S -s 2000 && output_of "$1" \
    'echo "JOB $(ulimit -S -s)"; srun -n1 bash -c '"'"'echo "STEP $(ulimit -S -s)"'"'"'' \
    "${@:2}") | sort | tr '\n' ' '
}
[ "$(stack_of prop --propagate=STACK,NOFILE)" = "JOB 2000 STEP 2000 " ] ||
  fail "--propagate=STACK: $(cat "$work/prop.out")"
[ "$(stack_of noprop)" != "JOB 2000 STEP 2000 " ] || fail "the limit passed without --propagate"
out=$(sbatch --propagate=STAK --wrap true 2>&1) && fail "--propagate=STAK: $out"
case $out in *"--propagate=STAK: 'STAK' is none of"*) ;; *) fail "--propagate=STAK: $out" ;; esac
tmp_mib=$(python3 -c 'import os; s = os.statvfs("/tmp"); print(s.f_blocks * s.f_frsize >> 20)')
[ "$tmp_mib" -gt 16 ] || skip "/tmp holds only $tmp_mib MiB"

# node2 again, its TmpDisk from /proc (0 blocks), with the features "fast" and "ib".
pid=$(cat "$state/node2.pid")
mapfile -d '' cmd < "/proc/$pid/cmdline"
kill "$pid"
wait_for "node2's worker to stop" 15 eval '! pid_alive '"$pid"
respawn node2 "${cmd[@]}" --tmp-fs /proc --features fast,ib </dev/null >>"$state/node2.log" 2>&1 &
echo $! > "$state/node2.pid"
wait_for "node2's worker to register again" 15 \
  eval "[ \"\$(grep -c ' registered' '$state/node2.log')\" -ge 2 ]"
wait_for "node2 to be up" 15 eval "scontrol show node node2 | grep -q 'State=IDLE '"

scontrol show node node1 | grep -q "TmpDisk=$tmp_mib\$\|TmpDisk=$tmp_mib " ||
  fail "node1 does not say TmpDisk=$tmp_mib: $(scontrol show node node1)"
scontrol show node node2 | grep -q "TmpDisk=0\\b" ||
  fail "node2 does not say TmpDisk=0: $(scontrol show node node2)"
[ "$(sinfo -h -N -o '%N %d' | sort | tr '\n' ' ')" = "node1 $tmp_mib node2 0 " ] ||
  fail "sinfo %d: $(sinfo -h -N -o '%N %d')"

# --prefer: with a one-core job on node1 (best fit ranks node1 first then), a job without
# --prefer takes node1 and one with --prefer=fast node2; with node2 held, it takes node1
# rather than wait.
where() { output_of "$1" 'echo "$SLURMD_NODENAME"' "${@:2}"; } # where NAME SBATCH-OPTIONS...
hold() { # hold GATE SBATCH-OPTIONS...: a job that runs until gate GATE opens, started; its id
  printf '#!/bin/bash\n%s\n' "$(gate_wait "$1")" > "$work/hold-$1.sh"
  held_id=$(sbatch_id "${@:2}" "$work/hold-$1.sh")
  wait_start "$held_id"
}
hold small -n 1 -w node1
small=$held_id
[ "$(where plain1)" = node1 ] || fail "a job without --prefer: $(cat "$work/plain1.out")"
[ "$(where fast1 --prefer=fast)" = node2 ] || fail "--prefer=fast: $(cat "$work/fast1.out")"
# Feature expressions, read left to right as Slurm reads them (node1 has no feature).
[ "$(where fast3 --prefer='(slow|fast)&ib')" = node2 ] ||
  fail "--prefer='(slow|fast)&ib': $(cat "$work/fast3.out")"
[ "$(where fast4 --prefer='ib|slow&nope')" = node1 ] ||
  fail "--prefer='ib|slow&nope' preferred node2: $(cat "$work/fast4.out")"
[ "$(where and1 -C 'fast&ib')" = node2 ] || fail "-C 'fast&ib': $(cat "$work/and1.out")"
[ "$(where or1 -C 'slow|ib')" = node2 ] || fail "-C 'slow|ib': $(cat "$work/or1.out")"
[ "$(where br1 -C '[slow|ib]')" = node2 ] || fail "-C '[slow|ib]': $(cat "$work/br1.out")"
out=$(sbatch -o /dev/null -N2 -C '[ib|fast]' --wrap true 2>&1) && fail "-N2 -C '[ib|fast]': $out"
case $out in *"no one alternative of [ib|fast] can ever hold all its nodes"*) ;;
  *) fail "-N2 -C '[ib|fast]': $out" ;; esac
out=$(sbatch -o /dev/null -C 'ib&slow' --wrap true 2>&1) && fail "-C 'ib&slow' was taken: $out"
case $out in *"resources.constraint: no node has the features 'ib&slow' asks for"*) ;;
  *) fail "-C 'ib&slow': $out" ;; esac
out=$(sbatch -C 'fast,ib' --wrap true 2>&1) && fail "-C 'fast,ib' was taken: $out"
case $out in *"-C fast,ib: at character 5: ',' joins nothing: '&' for nodes with both"*) ;;
  *) fail "-C 'fast,ib': $out" ;; esac
gate small
wait_end "$small" 30 || fail "the one-core job: $(jq "$small" 'j')"
hold node2 --exclusive -w node2
holder=$held_id
[ "$(where fast2 --prefer=fast)" = node1 ] || fail "--prefer=fast, node2 busy: $(cat "$work/fast2.out")"
gate node2
wait_end "$holder" 30 || fail "the node2 holder: $(jq "$holder" 'j')"

# While node1 is held, a job that needs 1 MiB of it waits (node2 has none) and a job
# queued after it without --tmp takes node2; once node1 is free the first runs there.
hold node1 --exclusive -w node1
blocker=$held_id
printf '#!/bin/bash\n#SBATCH --tmp=1\n#SBATCH -o %s/tmp.out\necho "ON $SLURMD_NODENAME"\n' \
  "$work" > "$work/tmp.sh"
needs=$(sbatch --parsable "$work/tmp.sh" 2>&1) || fail "sbatch --tmp=1 refused: $needs"
other=$(sbatch_id --wrap 'echo "ON $SLURMD_NODENAME"' -o "$work/other.out")
wait_end "$other" 30 || fail "the job without --tmp failed: $(jq "$other" 'j')"
grep -qx 'ON node2' "$work/other.out" || fail "the job without --tmp: $(cat "$work/other.out")"
[ "$(job_state "$needs")" = PENDING ] || fail "the --tmp job did not wait for node1: $(jq "$needs" 'j')"
gate node1
wait_end "$needs" 30 || fail "the --tmp job failed: $(jq "$needs" 'j')"
grep -qx 'ON node1' "$work/tmp.out" || fail "the --tmp job ran elsewhere: $(cat "$work/tmp.out")"

# Two such nodes do not exist; more than any node has is said as such.
printf '#!/bin/bash\n#SBATCH -N 2\n#SBATCH --tmp=1M\ntrue\n' > "$work/two.sh"
if sbatch "$work/two.sh" > "$tmp/two.txt" 2>&1; then fail "-N 2 --tmp=1M was accepted"; fi
grep -q "may use 1 node(s) (its partition less excluded ones and those short of its --tmp), it asks for 2" \
  "$tmp/two.txt" || fail "-N 2 --tmp: $(cat "$tmp/two.txt")"
if sbatch --tmp=$((tmp_mib + 1)) --wrap true > "$tmp/big.txt" 2>&1; then fail "--tmp beyond every node was accepted"; fi
grep -q "no node has $((tmp_mib + 1)) MiB of temporary disk" "$tmp/big.txt" ||
  fail "--tmp beyond every node: $(cat "$tmp/big.txt")"

# What a job asked for, as squeue and scontrol say it.
held=$(sbatch --parsable -H --tmp=8 --wckey=proj7 --wrap true 2>&1)
[[ $held =~ ^[0-9]+$ ]] || fail "sbatch -H --tmp=8: $held"
[ "$(squeue -h -j "$held" -o '%d %w')" = '8M proj7' ] ||
  fail "squeue %d %w: $(squeue -h -j "$held" -o '%d %w')"
scontrol show job "$held" | grep -q 'MinTmpDiskNode=8M' ||
  fail "scontrol show job: $(scontrol show job "$held")"

check_logs
echo "$name: all checks passed"
