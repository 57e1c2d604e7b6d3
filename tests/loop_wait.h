/*
 * loop_wait.h: for Criterion tests that drive a libuv loop: run it until a condition holds,
 * failing the test when a deadline passes first, so a test waits on events, never on a
 * bare sleep. The deadline's timer lives on the caller's stack and is closed (its close
 * callback run) before the macro ends.
 */
#ifndef GS_TESTS_LOOP_WAIT_H
#define GS_TESTS_LOOP_WAIT_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <uv.h>

struct gs_test_deadline {
    uv_timer_t timer;
    bool expired;
};

static inline void gs_test_deadline_passed(uv_timer_t *timer)
{
    ((struct gs_test_deadline *)timer->data)->expired = true;
}

/* Runs loop until cond holds; fails the test when ms milliseconds pass first. */
#define GS_TEST_RUN_UNTIL(loop, cond, ms)                                                          \
    do {                                                                                           \
        struct gs_test_deadline dl_ = {.expired = false};                                          \
        uv_timer_init((loop), &dl_.timer);                                                         \
        dl_.timer.data = &dl_;                                                                     \
        uv_timer_start(&dl_.timer, gs_test_deadline_passed, (ms), 0);                              \
        while (!(cond) && !dl_.expired)                                                            \
            uv_run((loop), UV_RUN_ONCE);                                                           \
        uv_close((uv_handle_t *)&dl_.timer, NULL);                                                 \
        uv_run((loop), UV_RUN_NOWAIT);                                                             \
        cr_assert((cond), "timed out waiting for %s", #cond);                                      \
    } while (0)

#endif
