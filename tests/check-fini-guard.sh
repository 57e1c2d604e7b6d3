#!/usr/bin/env bash
# check-fini-guard.sh CMD...: runs test_fini_guard (CMD, with ctest's arguments) and passes
# only when fini_guard.c failed it as it should: exit status 1, a [FAIL] line for each of the
# two tests that passed but whose suite's .fini failed, none for the others, and a summary
# that counts those two as failing and the test that failed in its body once; then again
# with only the first of the two, which fails the binary on its own.
# The binary's output is shown indented: its own [SKIP] line must not reach count-skips.sh as
# a skipped test of the suite (run-checked.sh still finds a sanitizer report in it).
set -u
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/  | /'

fail() {
  echo "check-fini-guard: $*" >&2
  exit 1
}

[ "$rc" -eq 1 ] || fail "exited $rc, want 1"

want_teardown="[FAIL] assert_in_fini::passes_but_its_teardown_fails: teardown failed: its suite's .fini failed 1 assertion
[FAIL] expect_in_fini::passes_but_its_teardown_expectation_fails: teardown failed: its suite's .fini failed 1 assertion"
got_teardown=$(printf '%s\n' "$out" | grep -F 'teardown failed:' | sort)
[ "$got_teardown" = "$want_teardown" ] || fail "teardown failures reported: '$got_teardown'"

for line in '[====] Synthesis: Tested: 4 | Passing: 1 | Failing: 3 | Crashing: 0' \
            '[PASS] clean_fini::passes:' \
            '[FAIL] assert_in_fini::fails_in_its_body_as_well:' \
            '[SKIP] assert_in_fini::skips: skipping on purpose'; do
  printf '%s\n' "$out" | grep -qF -- "$line" || fail "no line '$line'"
done
# Alone, the test whose only failure is in its teardown fails the binary (without the guard
# Criterion exits 0).
out=$("$@" --filter='assert_in_fini/passes_but_its_teardown_fails' 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/  | /'
[ "$rc" -eq 1 ] || fail "with only the test whose teardown fails: exited $rc, want 1"
echo "check-fini-guard: teardown failures fail their tests"
