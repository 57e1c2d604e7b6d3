/*
 * stop_signals.h: what makes a gsched daemon stop: SIGTERM or SIGINT on its loop. The first
 * of them calls on_stop once (later ones are ignored while the daemon shuts down);
 * gs_stop_signals_close() releases the handles so the loop can end.
 * Caller-owned storage; loop thread only. In libgs_uvcommon (links libuv).
 */
#ifndef GS_STOP_SIGNALS_H
#define GS_STOP_SIGNALS_H

#include <uv.h>

struct gs_stop_signals;

typedef void (*gs_stop_cb)(struct gs_stop_signals *sig, int signum, void *data);

struct gs_stop_signals {
    uv_signal_t term;
    uv_signal_t intr;
    gs_stop_cb on_stop;
    void *data;
};

/* Starts watching both signals. Returns 0 or a negative libuv error. */
int gs_stop_signals_init(struct gs_stop_signals *sig, uv_loop_t *loop, gs_stop_cb on_stop,
                         void *data);
void gs_stop_signals_close(struct gs_stop_signals *sig);

#endif
