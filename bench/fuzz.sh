#!/usr/bin/env bash
# fuzz.sh BUILD_DIR [EXECUTIONS]: runs each libFuzzer harness of tests/fuzz/ (a build with
# -DGSCHED_FUZZ=ON, as `make test-fuzz` makes in build-fuzz) for EXECUTIONS inputs (default
# 10 million) or MAX_SECONDS (default 3600) each, whichever ends first, starting from its
# seed corpus with -seed=1. Prints one row per fuzzer: inputs run, inputs per second,
# libFuzzer's final edge coverage (cov) and features (ft), the corpus it grew (inputs and
# bytes), and the crashes, leaks, timeouts and out-of-memory inputs it wrote (it stops at the
# first). FUZZERS (default: all nine) picks some. Logs, grown corpora and findings go to
# WORK (default: a temporary directory, removed at the end unless KEEP=1). FORK=N runs each
# fuzzer as libFuzzer's -fork=N: N worker processes sharing one corpus, the inputs counted
# together (the slow harnesses, hostlist and topology, reach 10 million sooner on N cores).
#
# With LIVE_BUILD set to a sanitizer build (`make test-asan`'s build-asan), the report goes on
# with the live daemons (tests/fuzz/live_fuzz.c): live_fuzz --target T for each T of
# LIVE_TARGETS (default "sched worker"), --seed 1, for EXECUTIONS messages or MAX_SECONDS,
# whichever ends first, with a liveness check every LIVE_BATCH sequences (default 200:
# live_fuzz's own default, 50, spends much of a long run in checks; the worker's first
# minute ran 1,386 messages/s at 50 and 2,427/s at 200). One row per daemon: messages sent, messages per second, distinct
# log lines the daemon wrote (live_fuzz's coverage figure: its daemons carry no edge
# counters), connections (sequences), liveness checks passed, failures (it stops at the
# first; the failure file with the sequences that caused it is listed).
#
# fuzz.sh --live ASAN_BUILD_DIR [MESSAGES]: the live daemons alone.
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: bench/fuzz.sh BUILD_DIR [EXECUTIONS] | bench/fuzz.sh --live ASAN_BUILD_DIR [MESSAGES]" >&2
  exit 2
fi
live_only=no
if [ "$1" = --live ]; then
  live_only=yes
  shift
  LIVE_BUILD=${1:?usage: bench/fuzz.sh --live ASAN_BUILD_DIR [MESSAGES]}
fi
build=$1
runs=${2:-10000000}
max_seconds=${MAX_SECONDS:-3600}
fuzzers=${FUZZERS:-"toml jobfile sbatch hostlist frame topology config features pmi"}
here=$(cd "$(dirname "$0")" && pwd)
seeds=$here/../tests/fuzz/corpus
work=${WORK:-$(mktemp -d)}
# (A live daemon's failure keeps it: the failure file is what replays the failure.)
[ "${KEEP:-0}" = 1 ] || [ -n "${WORK:-}" ] || trap '[ -e "$work/.keep" ] || rm -rf "$work"' EXIT

# The same input caps as the ctest runs (tests/fuzz/CMakeLists.txt); the others let
# libFuzzer pick its default from the seeds.
max_len_of() {
  case $1 in
    hostlist) echo 4096 ;;
    topology) echo 65536 ;;
  esac
}

# Seed directories beside corpus/NAME, as tests/fuzz/CMakeLists.txt gives them (SEEDS).
extra_seeds_of() {
  case $1 in
    sbatch) echo "$here/../tests/sbatch/scripts" ;;
  esac
}

# What the fuzzer wrote to $1: crash-, leak-, timeout- and oom- files, one per line.
findings_in() {
  find "$1" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \)
}

# The value after "key:" on libFuzzer's last status line ("#N DONE cov: 1 ft: 2 corp: 3/4b").
status_field() {
  sed -n "s/.* $2: \([^ ]*\).*/\1/p" "$1" | tail -1
}

run_one() {
  local name=$1 dir=$work/$1 log=$work/$1.log start end execs rate findings
  local flags=(-seed=1 -runs="$runs" -max_total_time="$max_seconds" -print_final_stats=1
    -artifact_prefix="$dir/")
  [ -z "$(max_len_of "$name")" ] || flags+=(-max_len="$(max_len_of "$name")")
  [ -z "${FORK:-}" ] || flags+=(-fork="$FORK")
  local dirs=("$dir/corpus" "$seeds/$name")
  [ -z "$(extra_seeds_of "$name")" ] || dirs+=("$(extra_seeds_of "$name")")
  mkdir -p "$dir/corpus"
  start=$(date +%s)
  "$build/fuzz/fuzz_$name" "${flags[@]}" "${dirs[@]}" >"$log" 2>&1 || true
  end=$(date +%s)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  if [ -n "${FORK:-}" ]; then # the parent's last "#N: cov: ..." line counts every worker's
    execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
    rate=$((${execs:-0} / (end - start > 0 ? end - start : 1)))
  fi
  findings=$(findings_in "$dir" | wc -l)
  printf '%-9s %12s %9s %6s %7s %14s %8s %6s\n' "$name" "${execs:-?}" "${rate:-?}" \
    "$(status_field "$log" cov)" "$(status_field "$log" ft)" "$(status_field "$log" corp)" \
    "$findings" "$((end - start))"
  findings_in "$dir" | sed 's/^/          finding: /'
}

# The value of key= in live_fuzz's report line.
report_field() {
  sed -n "s/^live_fuzz: target=.* $2=\([^ ]*\).*/\1/p" "$1" | tail -1
}

live_one() {
  local target=$1 dir=$work/live-$1 log=$work/live-$1.log start end
  mkdir -p "$dir"
  start=$(date +%s)
  "$LIVE_BUILD/fuzz/live_fuzz" --target "$target" --bin "$LIVE_BUILD/bin" --seed 1 \
    --batch "${LIVE_BATCH:-200}" --messages "$runs" --seconds "$max_seconds" --work "$dir/run" \
    --regress "$here/../tests/fuzz/live_regress/$target" >"$log" 2>&1 || true
  end=$(date +%s)
  printf '%-9s %12s %9s %9s %10s %8s %8s %6s\n' "live-$target" \
    "$(report_field "$log" messages)" "$(report_field "$log" rate)" \
    "$(report_field "$log" log_kinds)" "$(report_field "$log" sequences)" \
    "$(report_field "$log" checks)" "$(report_field "$log" failures)" "$((end - start))"
  if [ -n "$(find "$dir/run" -maxdepth 1 -name 'failure-*' 2>/dev/null)" ]; then
    touch "$work/.keep"
    find "$dir/run" -maxdepth 1 -name 'failure-*' | sed 's/^/          finding: /'
  fi
  grep -m1 'FAILURE' "$log" | sed 's/^/          /' || true
}

if [ $live_only = no ]; then
  echo "budget: $runs inputs or ${max_seconds} s per fuzzer; work in $work"
  printf '%-9s %12s %9s %6s %7s %14s %8s %6s\n' fuzzer executions exec/s cov ft corpus \
    findings secs
  for name in $fuzzers; do
    run_one "$name"
  done
fi
if [ -n "${LIVE_BUILD:-}" ]; then
  echo "live daemons: $runs messages or ${max_seconds} s per daemon, from $LIVE_BUILD; work in $work"
  printf '%-9s %12s %9s %9s %10s %8s %8s %6s\n' daemon messages msg/s log_kinds sequences \
    checks failures secs
  for target in ${LIVE_TARGETS:-sched worker}; do
    live_one "$target"
  done
fi
