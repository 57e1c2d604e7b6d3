#!/usr/bin/env bash
# gpu_bind.sh BIN_DIR SRC_DIR: srun --gpu-bind (issue 20) in a batch job holding a whole
# node of tests/topologies/pcie-8gpu.xml (8 GPUs, 4 on each of two NUMA nodes, 64 cores):
# each task's CUDA_VISIBLE_DEVICES under map_gpu, mask_gpu, per_task, closest (a step of 8
# one-core tasks has 4 on each socket, dealt round them as Slurm's default block:cyclic
# does: the odd ranks, on the second, see its GPUs) and single:2 (the first two tasks of
# each socket share its first GPU); sbatch's own --gpu-bind reaching the
# steps through SLURM_GPU_BIND; an id the step does not have refused with the reason before
# anything runs, and a typo refused by srun itself. verbose: each task's stderr starts with
# Slurm's report of its binding. sbatch --ntasks-per-gpu=2 on 4 GPUs: 8 tasks, two on each
# GPU (single:2), from a script whose #SBATCH -W makes sbatch wait and exit as the job did.
name="integration_gpu_bind"
. "$(dirname "$0")/lib.sh"
start_cluster --workers 1 --topology "$src/tests/topologies/pcie-8gpu.xml"

cat > "$work/bind.sh" << 'EOF'
#!/bin/bash
#SBATCH -N1 --exclusive --gres=gpu:8 --ntasks=8 --gpu-bind=single:2 -o bind-%j.out
show() { echo "== $*"; srun "$@" -l sh -c 'echo "$CUDA_VISIBLE_DEVICES"' | sort -n; }
show --gpu-bind=map_gpu:7,5*2 -n4
show --gpu-bind=mask_gpu:0x3,0xc0 -n2
show --gpu-bind=per_task:3 -n3
show --gpu-bind=verbose,closest -n8 2> verbose.err
show -n8
echo "== none"; srun --gpu-bind=none -n1 sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
echo "== range"; srun --gpu-bind=map_gpu:8 -n1 true 2>&1; echo "rc=$?"
echo "== typo"; srun --gpu-bind=closet -n1 true 2>&1; echo "rc=$?"
EOF
out=$("$bin/gsched" sbatch --parsable "$work/bind.sh" 2>&1) || fail "sbatch refused: $out"
j=${out%%;*}
wait_end "$j" 60 || fail "the job failed: $(jq "$j" 'j'); $(cat "$work/bind-$j.out")"
want='== --gpu-bind=map_gpu:7,5*2 -n4
0: 7
1: 5
2: 5
3: 7
== --gpu-bind=mask_gpu:0x3,0xc0 -n2
0: 0,1
1: 6,7
== --gpu-bind=per_task:3 -n3
0: 0,1,2
1: 3,4,5
2: 6,7,0
== --gpu-bind=verbose,closest -n8
0: 0,1,2,3
1: 4,5,6,7
2: 0,1,2,3
3: 4,5,6,7
4: 0,1,2,3
5: 4,5,6,7
6: 0,1,2,3
7: 4,5,6,7
== -n8
0: 0
1: 4
2: 0
3: 4
4: 1
5: 5
6: 1
7: 5
== none
0,1,2,3,4,5,6,7
== range'
got=$(sed -n '1,/^== range/p' "$work/bind-$j.out")
[ "$got" = "$want" ] || fail "bindings: got
$got
want
$want"
grep -q "map_gpu id 8 names a GPU the step does not have on the node (it has 8 there, 0-7)" \
  "$work/bind-$j.out" || fail "out of range: $(sed -n '/^== range/,$p' "$work/bind-$j.out")"
grep -q "srun: error: --gpu-bind: 'closet' is none of" "$work/bind-$j.out" ||
  fail "typo: $(sed -n '/^== typo/,$p' "$work/bind-$j.out")"
[ "$(grep -c '^rc=[1-9]' "$work/bind-$j.out")" = 2 ] || fail "refused sruns did not fail: $(cat "$work/bind-$j.out")"
for half in "F 0246 0,1,2,3" "F0 1357 4,5,6,7"; do
  read -r mask ranks list <<<"$half"
  n=$(grep -Ec "^[$ranks]: gpu-bind: usable_gres=0x$mask; bit_alloc=0xFF; local_inx=[$ranks]; global_list=$list; local_list=$list\$" "$work/verbose.err")
  [ "$n" = 4 ] || fail "--gpu-bind=verbose reported $n of tasks $ranks: $(cat "$work/verbose.err")"
done

cat > "$work/pergpu.sh" << 'EOF'
#!/bin/bash
#SBATCH -N1 --gpus-per-node=4 --ntasks-per-gpu=2 -W --priority=10 -o pergpu-%j.out
echo "ntasks=$SLURM_NTASKS per_gpu=$SLURM_NTASKS_PER_GPU bind=$SLURM_GPU_BIND"
srun -l sh -c 'echo "$CUDA_VISIBLE_DEVICES"' | sort -n
exit 3
EOF
out=$(cd "$work" && "$bin/gsched" sbatch --parsable pergpu.sh 2>/dev/null)
rc=$?
j=${out%%;*}
[ "$rc" = 3 ] || fail "#SBATCH -W: sbatch exited $rc, not the job's 3: $out"
expect "$j" 'j["state"] == "FAILED" and j["spec"]["priority"] == 10'
want='ntasks=8 per_gpu=2 bind=single:2
0: 0
1: 0
2: 1
3: 1
4: 2
5: 2
6: 3
7: 3'
[ "$(cat "$work/pergpu-$j.out")" = "$want" ] || fail "--ntasks-per-gpu=2: $(cat "$work/pergpu-$j.out")"
stop_cluster
check_logs
echo "$name: passed"
