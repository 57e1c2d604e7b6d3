/* test_fini_guard.c: suites whose teardowns fail on purpose, to show fini_guard.c at work.
 *
 * Not an ordinary test: this binary must fail. check-fini-guard.sh runs it as ctest runs
 * every Criterion test and passes only when it exits 1 with exactly the two tests whose
 * teardowns failed reported and counted as failed, the test that failed in its body
 * counted once, and the passing and skipped tests left alone.
 */
#include <criterion/criterion.h>
#include <stdbool.h>

static void teardown_asserts(void)
{
    cr_assert(false, "teardown assertion failing on purpose");
}

static void teardown_expects(void)
{
    cr_expect(false, "teardown expectation failing on purpose");
}

static void teardown_passes(void)
{
    cr_assert(true);
}

TestSuite(assert_in_fini, .fini = teardown_asserts);
TestSuite(expect_in_fini, .fini = teardown_expects);
TestSuite(clean_fini, .fini = teardown_passes);

Test(assert_in_fini, passes_but_its_teardown_fails)
{
    cr_assert(true);
}

/* Already failed when its teardown fails too: one failure, not two. */
Test(assert_in_fini, fails_in_its_body_as_well)
{
    cr_assert(false, "body assertion failing on purpose");
}

/* Criterion ends a skipped test without running .fini: it stays a skip. */
Test(assert_in_fini, skips)
{
    cr_skip_test("skipping on purpose");
}

Test(expect_in_fini, passes_but_its_teardown_expectation_fails)
{
    cr_assert(true);
}

Test(clean_fini, passes)
{
    cr_assert(true);
}
