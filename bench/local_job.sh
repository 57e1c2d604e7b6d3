# shellcheck shell=bash
# shellcheck disable=SC2154 # bin, bench_name: the caller's
# local_job.sh: sourced by the benchmarks that time ways of doing one thing inside a batch job
# on a `gsched up` cluster (mpi_start.sh, sbcast.sh): the cluster, the job, the figures. The
# caller sets bin (the build's bin directory) and bench_name (for messages) first. The job
# script (run.sh, the caller's) appends "LABEL MS" lines to times and a line to fail.log for
# each run that failed.

# file_bench_args [BUILD_DIR] [MIB] [ROUNDS]: the arguments of the benchmarks that move a file
# (sbcast.sh, srun_io.sh): build and bin from BUILD_DIR (default build), mib (default 256)
# and rounds (default 5).
file_bench_args() {
  build=$(cd "${1:-build}" && pwd)
  mib=${2:-256}
  rounds=${3:-5}
  bin="$build/bin"
}

# local_cluster NAMES...: a cluster of two workers without GPUs in a temporary directory
# ($tmp, the current directory from here), brought down and removed at exit, its socket in
# GSCHED_SOCKET, and gsched linked as each of NAMES first on PATH.
local_cluster() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-bench.XXXXXX")
  trap 'cd /; "$bin/gsched" down --state "$tmp/state" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
  cd "$tmp" || exit 1
  "$bin/gsched" up --workers 2 --gpus-per-node 0 --state "$tmp/state" >/dev/null
  export GSCHED_SOCKET=$tmp/state/gschedd.sock
  mkdir -p "$tmp/bin"
  for c in "$@"; do ln -sf "$bin/gsched" "$tmp/bin/$c"; done
  export PATH=$tmp/bin:$PATH
}

# run_job SBATCH_OPTION...: runs run.sh as a batch job with those options and waits for it;
# exits, saying why, when it failed or one of its runs did (fail.log, and EXTRA_LOGS).
run_job() {
  local out id
  out=$("$bin/gsched" sbatch --parsable -t 30 -o "$tmp/job.out" "$@" run.sh)
  id=${out%%;*}
  "$bin/gsched" wait "$id" --timeout 1800s >/dev/null || { cat "$tmp/job.out" >&2; exit 1; }
  if [ -s fail.log ]; then
    echo "$bench_name: runs failed:" >&2
    cat fail.log job.out ${EXTRA_LOGS:-} >&2
    exit 1
  fi
}

# quantile LABEL Q: the Q quantile (nearest rank) of LABEL's times, in ms.
quantile() {
  awk -v k="$1" '$1 == k { print $2 }' times | sort -n |
    awk -v q="$2" '{ v[NR] = $1 } END { print v[int((NR - 1) * q) + 1] }'
}
