#!/bin/sh
# count-skips.sh LOG: the tests that skipped themselves in a ctest run (Criterion's [SKIP]
# lines, printed at verbosity 1), counted and grouped by reason, so that a GPU test without a
# device reads as skipped and is never mistaken for a pass. Prints nothing when none skipped.
log=$1
[ -f "$log" ] || exit 0
n=$(grep -c '^\[SKIP\]' "$log")
[ "$n" -gt 0 ] || exit 0
echo "skipped tests: $n"
grep '^\[SKIP\]' "$log" | sed -E 's/^\[SKIP\] [^:]+::[^:]+: ?//' | sort | uniq -c |
  sed -E 's/^ *([0-9]+) (.*)$/  \1 skipped: \2/'
