#!/usr/bin/env bash
# sbatch.sh GSCHED FAKE_GSCHEDD: `gsched sbatch` (and a link named sbatch) against
# fake_gschedd, which answers every SubmitRequest with job 42 unless the job is named
# "rejected" (see fake_gschedd.c): --test-only's view with and without a scheduler, the
# refusals of bad scripts (exit 1, each line named, nothing sent), and submission from a
# file, standard input and --wrap, with --parsable, --json, --hold and --wait.
set -u
gsched=$1
fake=$2
fail() { echo "sbatch: $*" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/gsched-sbatch.XXXXXX")
fake_pid=
cleanup() { [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

# run WANT_STATUS CMD...: runs gsched, leaves stdout in $out and stderr in $err.
run() {
  local want=$1 rc
  shift
  out=$("$gsched" "$@" 2>"$dir/stderr" < "${stdin:-/dev/null}")
  rc=$?
  err=$(cat "$dir/stderr")
  if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' <<< "$err"; then
    fail "gsched $*: sanitizer report: $err"
  fi
  [ "$rc" -eq "$want" ] || fail "gsched $*: exit $rc, want $want; stdout: $out; stderr: $err"
}
has() { grep -qF -- "$2" <<< "$1" || fail "missing '$2' in: $1"; }
records() { wc -l < "$dir/record" 2>/dev/null || echo 0; }

mkdir "$dir/work"
cd "$dir/work" || fail "no work dir"
cat > train.sh <<'EOF'
#!/bin/bash
#SBATCH --job-name=llama-ft
#SBATCH -N 2 --ntasks-per-node=1
#SBATCH --gres=gpu:a100:4
#SBATCH -c 4 --mem-per-gpu=10G
#SBATCH -t 00:30:00
#SBATCH -o %x-%j.out
#SBATCH --mail-type=END --hint=memory_bound
srun python3 train.py
EOF
# shellcheck disable=SC2016 # the job expands it, not this shell
printf '#!/bin/sh\n#SBATCH -J sweep -a 0-15:4%%2\necho $SLURM_ARRAY_TASK_ID\n' > sweep.sh
printf '#!/bin/sh\n#SBATCH --nodse=2\n#SBATCH -t 5x\necho hi\n' > typo.sh
cat > het.sh <<'EOF'
#!/bin/bash
#SBATCH -J het -p gpu -N 2 --gres=gpu:4
#SBATCH hetjob
#SBATCH -p gpu -n 3 -C cpu
srun --het-group=0,1 hostname
EOF

# --- --help: the parser's own table; every option in it is known to the parser ----------------
run 0 sbatch --help
has "$out" "Usage: sbatch [OPTIONS] SCRIPT [ARGS...]"
has "$out" "  -C, --constraint=VALUE"
has "$out" "      --switches=VALUE"
has "$out" "Refused (Slurm's, not done here):"
has "$out" "      --ntasks-per-socket=VALUE"
while read -r opt; do # each taken option, given once with a value it may refuse: never unknown
  run_any() { "$gsched" sbatch --test-only "$@" --wrap true 2>&1 < /dev/null; }
  said=$(run_any "$opt=1")
  grep -q "unknown option" <<< "$said" && fail "--help lists $opt, the parser does not know it: $said"
done < <(sed -n '/^Options:/,/^Accepted/p' <<< "$out" | grep -o -- '--[a-z-]*' | grep -v -- '--wrap\|--test-only\|--help')
run 0 sbatch --usage
has "$out" "Options:"

# --- --test-only without a scheduler: the local view, and a warning ---------------------------
export GSCHED_SOCKET=$dir/none.sock
run 0 sbatch --test-only train.sh
has "$out" "job_name=llama-ft
script=train.sh
nodes=2
ntasks=2
tasks_per_node=1
cpus_per_task=4
cpus_per_gpu=0
gpus_per_node=4
gpus_per_task=0
mem_per_node_mib=40960
time_limit=00:30:00
time_min=
partition=
account=
qos=
constraint=a100"
has "$out" "workdir=$dir/work
stdout=%x-%j.out
stderr=
open_mode=truncate
mail_type=END
mail_user=
stdout_path=$dir/work/llama-ft-%j.out"
has "$err" "sbatch: warning: train.sh:8: --hint=memory_bound: ignored: tasks are not spread one core per socket"
has "$err" "sbatch: warning: no scheduler answered; the job was checked here only"
# The command line over the script, and --json.
run 0 sbatch --test-only --json -N 1 -p debug -t 1-0 train.sh
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["nodes"] == 1 and d["partition"] == "debug" and d["time_limit"] == "1-00:00:00" and d["qos"] is None, d' "$out" \
  || fail "--test-only --json: $out"
run 0 sbatch --test-only sweep.sh
has "$out" "array=0-12:4%2
array_size=4"
has "$out" "stdout=slurm-%A_%a.out"

# A heterogeneous job: component 0's shape in the usual keys, the others' after them; the
# command line's ':' adds components over the script's.
run 0 sbatch --test-only het.sh
has "$out" "nodes=2
ntasks=2"
has "$out" "het_size=2
het1_nodes=1
het1_ntasks=3
het1_tasks_per_node=3"
has "$out" "het1_constraint=cpu"
run 0 sbatch --test-only -N 1 : -N 4 : -n 2 het.sh
has "$out" "het_size=3
het1_nodes=4
het1_ntasks=4"
has "$out" "het1_constraint=cpu
het2_nodes=1
het2_ntasks=2"
run 1 sbatch -t 10 : -t 20 het.sh
has "$err" "sbatch: error: command line: -t 20: '--time' applies to the whole heterogeneous job in gsched: give it before the first ':'"
run 1 sbatch -w node1 het.sh
has "$err" "sbatch: error: command line: --nodelist: a heterogeneous job takes no node list"

# --- refusals: every problem, one line each, exit 1 --------------------------------------------
run 1 sbatch typo.sh
has "$err" "sbatch: error: typo.sh:2: --nodse=2: unknown option (did you mean --nodes?)"
has "$err" "sbatch: error: typo.sh:3: -t 5x: '5x' is not a time"
[ -z "$out" ] || fail "a refused script printed: $out"
run 1 sbatch -N 2 --gpus=3 train.sh
has "$err" "sbatch: error: command line: --gpus: 3 GPUs do not divide evenly over 2 nodes"
run 1 sbatch no-such.sh
has "$err" "sbatch: error: Unable to open file no-such.sh"
run 1 sbatch
has "$err" "sbatch: error: <stdin>:1: the first line must start with #!"
run 1 sbatch --wrap 'echo hi' train.sh
has "$err" "--wrap: cannot be combined with a batch script"
run 2 sbatch --socket
has "$err" "sbatch: error: --socket needs a value"
run 2 sbatch --json --parsable train.sh

# --- against fake_gschedd ------------------------------------------------------------------------
export GSCHED_SOCKET=$dir/gschedd.sock
"$fake" "$GSCHED_SOCKET" "$dir/record" &
fake_pid=$!
for _ in $(seq 100); do [ -S "$GSCHED_SOCKET" ] && break; sleep 0.05; done
[ -S "$GSCHED_SOCKET" ] || fail "fake_gschedd did not start"

run 0 sbatch --test-only train.sh
has "$out" "job_name=llama-ft"
has "$err" "sbatch: the scheduler would accept the job; nothing was submitted"
has "$err" "sbatch: warning: no node has the feature 'h100' today"

# A refused script sends nothing.
before=$(records)
run 1 sbatch typo.sh
[ "$(records)" -eq "$before" ] || fail "a refused script was sent"

# First --wait: the fake completes job 42 on its second WaitRequest.
run 0 sbatch --wait --parsable train.sh
[ "$out" = 42 ] || fail "--wait --parsable printed: $out"
has "$err" "job 42 COMPLETED exit=0"
run 0 sbatch train.sh extra "two words"
[ "$out" = "Submitted batch job 42" ] || fail "sbatch printed: $out"
has "$err" "sbatch: warning: no node has the feature 'h100' today"
has "$(tail -1 "$dir/record")" "submit workdir=$dir/work source=$dir/work/train.sh user=$(id -un) hold=0"
run 0 sbatch -H --parsable ./train.sh
[ "$out" = 42 ] || fail "--parsable printed: $out"
has "$(tail -1 "$dir/record")" "source=$dir/work/train.sh user=$(id -un) hold=1"
run 0 sbatch --json -D /tmp train.sh
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["job_id"] == 42 and d["warnings"], d' "$out" \
  || fail "sbatch --json: $out"
has "$(tail -1 "$dir/record")" "submit workdir=/tmp source=$dir/work/train.sh"
run 0 sbatch --wrap 'echo hi' -p x
[ "$out" = "Submitted batch job 42" ] || fail "--wrap printed: $out"
has "$(tail -1 "$dir/record")" "submit workdir=$dir/work source= "
stdin=sweep.sh run 0 sbatch
[ "$out" = "Submitted batch job 42" ] || fail "from stdin printed: $out"
# -Q: nothing but errors; -v: the options as read first; --wait-all-nodes takes 0 or 1.
run 0 sbatch -Q --wait-all-nodes=1 train.sh
[ -z "$out$err" ] || fail "-Q printed: '$out' '$err'"
run 0 sbatch -v -N 2 train.sh
[ "$out" = "Submitted batch job 42" ] || fail "-v printed: $out"
has "$err" "sbatch: defined options"
has "$err" "sbatch: nodes=2"
run 1 sbatch --wait-all-nodes=yes train.sh
has "$err" "--wait-all-nodes=yes: must be 0 or 1"

# The scheduler's refusal, as Slurm words it.
run 1 sbatch -J rejected train.sh
has "$err" "sbatch: error: Batch job submission failed: job rejected"
has "$err" "sbatch: error: job.toml:3:1: resources.nodes: only 2 nodes"

# Called through a link named sbatch, gsched is sbatch.
ln -s "$gsched" "$dir/sbatch"
out=$("$dir/sbatch" --parsable train.sh 2>/dev/null) || fail "as sbatch: exit $?"
[ "$out" = 42 ] || fail "as sbatch: $out"
echo "sbatch: ok"
