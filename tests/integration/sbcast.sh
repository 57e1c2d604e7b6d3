#!/usr/bin/env bash
# sbcast.sh BIN_DIR SRC_DIR: sbcast on a `gsched up` cluster of two workers. A two-node batch
# job's script copies a file (a few MiB, mode 750) to a path on each node: both nodes' tasks
# report it written, its bytes and mode are the source's, and -p keeps its times too. An
# existing destination is refused on every node without -f (left as it was) and replaced
# with it. A missing source, and sbcast outside a job, are refused with the reason. (The
# workers share this machine's filesystem, so each node's copy lands on the same path: the
# test reads each node's report, and the file the last one wrote.)
name="integration_sbcast"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 2 --gpus-per-node 0
slurm_names sbatch srun sbcast

head -c 3000000 /dev/urandom > "$work/src.bin"
chmod 750 "$work/src.bin"
touch -d '2020-02-02 02:02:02' "$work/src.bin"
dest=$work/dest.bin
job_file run.sh "#!/bin/sh
sbcast -f -p $work/src.bin $dest; echo \"preserve \$?\"
echo old > $dest
sbcast $work/src.bin $dest; echo \"exists \$?\"
cp $dest $work/kept.txt
sbcast --force $work/src.bin $dest; echo \"force \$?\"
sbcast $work/missing $dest; echo \"missing \$?\"
srun -l sh -c 'echo node \$SLURMD_NODENAME'"
id=$(sbatch_id -N2 -t 2 -o "$work/out" "$work/run.sh")
wait_end "$id" 60 || fail "the job failed: $(jq "$id" 'j'); $(cat "$work/out")"
out=$(cat "$work/out")

grep -qx "preserve 0" <<< "$out" || fail "sbcast -f -p: $out"
grep -qx "force 0" <<< "$out" || fail "sbcast --force: $out"
cmp -s "$work/src.bin" "$dest" || fail "the copy differs from its source"
[ "$(stat -c %a "$dest")" = 750 ] || fail "the copy's mode: $(stat -c %a "$dest")"
# -p kept the time; the last copy (without -p) is written now.
grep -qx "exists 1" <<< "$out" || fail "an existing destination was not refused: $out"
grep -q "sbcast: error: node[12]: $dest exists (sbcast -f overwrites it)" <<< "$out" ||
  fail "the refusal's reason: $out"
[ "$(cat "$work/kept.txt")" = old ] || fail "a refused sbcast changed the file: $(head -c 80 "$work/kept.txt")"
grep -qx "missing 1" <<< "$out" && grep -q "sbcast: error: $work/missing: No such file or directory" <<< "$out" ||
  fail "a missing source: $out"
# -p's times, checked on a copy made alone.
job_file p.sh "#!/bin/sh
rm -f $dest
sbcast -p $work/src.bin $dest.p; echo \"p \$?\""
id=$(sbatch_id -N1 -t 1 -o "$work/p.out" "$work/p.sh")
wait_end "$id" 30 || fail "the -p job failed: $(cat "$work/p.out")"
grep -qx "p 0" "$work/p.out" || fail "sbcast -p: $(cat "$work/p.out")"
[ "$(stat -c %Y "$dest.p")" = "$(stat -c %Y "$work/src.bin")" ] ||
  fail "-p did not keep the modification time: $(stat -c %y "$dest.p")"
ls "$work" | grep -q 'sbcast-' && fail "a temporary file was left: $(ls "$work")"

out=$(env -u SLURM_JOB_ID "$bin/gsched" sbcast "$work/src.bin" "$work/x" 2>&1) &&
  fail "sbcast outside a job succeeded: $out"
grep -q "runs inside a job" <<< "$out" || fail "sbcast outside a job: $out"
check_logs
stop_cluster
echo "$name: passed"
