#!/usr/bin/env bash
# Runs one test command, shows its output, and fails when that output holds a sanitizer
# report (Criterion reports a leak but still exits 0) or the command itself fails.
set -u
log=$(mktemp "${TMPDIR:-/tmp}/gsched-test.XXXXXX")
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
cat "$log"
if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
  echo "run-checked: sanitizer report in output of $1" >&2
  exit 1
fi
exit "$rc"
