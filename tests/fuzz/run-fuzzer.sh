#!/usr/bin/env bash
# Runs one libFuzzer harness for ctest:
#     run-fuzzer.sh FUZZER SEED_DIR WORK_DIR [FLAG or more seed directories...]
# The seeds are read, never written: libFuzzer adds the inputs it finds interesting to its
# first corpus directory, so that is WORK_DIR/corpus (emptied first), the seeds after it.
# A crash, leak or timeout is written to WORK_DIR/ as crash-<sha1> (leak-, timeout-, oom-)
# and fails the test; reproduce it with `FUZZER WORK_DIR/crash-...`.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: run-fuzzer.sh FUZZER SEED_DIR WORK_DIR [libFuzzer flag or seed dir...]" >&2
  exit 2
fi
fuzzer=$1 seeds=$2 work=$3
shift 3
rm -rf "$work/corpus"
mkdir -p "$work/corpus"
exec "$fuzzer" -artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" "$seeds" "$@"
