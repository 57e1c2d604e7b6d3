/* fini_guard.c: a failed assertion in a suite's .fini fails its test.
 *
 * Criterion 2.4.1 runs a suite's .fini after the test's result has been sent to the runner
 * and counted: a cr_assert or cr_expect that fails there is printed, but the test stays
 * PASSED and the binary exits 0, so no teardown check could ever fail a run.
 * gsched_add_test (tests/CMakeLists.txt) links this file into every Criterion executable.
 *
 * Its report hooks run in the runner process, never in a test's worker. By the POST_FINI
 * hook the runner has taken in the teardown's assertions: the test's failed_asserts counts
 * them, though its status is still what it was at POST_TEST. Criterion sets a test FAILED
 * at POST_TEST whenever it has a failed assertion, so a test that is not FAILED but has
 * failed assertions at POST_FINI got them in its teardown. (cr_skip_test ends a test's
 * worker without running .fini, so a skipped test has none.)
 *
 * The [PASS] line is printed by then; POST_FINI adds a [FAIL] line naming the test. POST_ALL
 * runs before Criterion prints its summary, writes its report files and picks its exit
 * status, all from the stats it is handed: there the test is set FAILED and moved from the
 * passing (or skipped) counts to the failing ones, in its suite's and the global counts.
 * A test that had already failed is counted once, as Criterion counted it.
 *
 * Stateless: both hooks read the condition from the stats, so there is nothing to keep
 * between them (Criterion's hooks take no user data) and nothing to free. Criterion names a
 * hook's functions by the line it is on: a test file's own ReportHook on one of the lines
 * used here would not link.
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/stats.h>
#include <stdbool.h>
#include <stdio.h>

/* True for a test whose failed assertions all came after POST_TEST counted it: they were
 * its suite's .fini's. */
static bool failed_in_teardown(const struct criterion_test_stats *test)
{
    return test->test_status != CR_STATUS_FAILED && test->failed_asserts > 0;
}

ReportHook(POST_FINI)(struct criterion_test_stats *test)
{
    if (!failed_in_teardown(test))
        return;
    fprintf(stderr, "[FAIL] %s::%s: teardown failed: its suite's .fini failed %d assertion%s\n",
            test->test->category, test->test->name, test->failed_asserts,
            test->failed_asserts == 1 ? "" : "s");
}

/* Moves one test from the count its status put it in to the failing count. */
static void count_as_failed(size_t *passed, size_t *skipped, size_t *failed,
                            enum criterion_test_status was)
{
    if (was == CR_STATUS_SKIPPED)
        --*skipped;
    else
        --*passed;
    ++*failed;
}

ReportHook(POST_ALL)(struct criterion_global_stats *all)
{
    for (struct criterion_suite_stats *suite = all->suites; suite != NULL; suite = suite->next) {
        for (struct criterion_test_stats *test = suite->tests; test != NULL; test = test->next) {
            if (!failed_in_teardown(test))
                continue;
            count_as_failed(&suite->tests_passed, &suite->tests_skipped, &suite->tests_failed,
                            test->test_status);
            count_as_failed(&all->tests_passed, &all->tests_skipped, &all->tests_failed,
                            test->test_status);
            test->test_status = CR_STATUS_FAILED;
        }
    }
}
