/*
 * stop_signals.c: SIGTERM/SIGINT handling shared by gschedd and gsched-workerd (see
 * stop_signals.h).
 */
#include "common/stop_signals.h"

#include "common/log.h"

static void on_signal(uv_signal_t *handle, int signum)
{
    struct gs_stop_signals *sig = handle->data;

    GS_LOG(GS_LOG_INFO, "signal=%d stopping", signum);
    uv_signal_stop(&sig->term);
    uv_signal_stop(&sig->intr);
    sig->on_stop(sig, signum, sig->data);
}

int gs_stop_signals_init(struct gs_stop_signals *sig, uv_loop_t *loop, gs_stop_cb on_stop,
                         void *data)
{
    int rc;

    sig->on_stop = on_stop;
    sig->data = data;
    uv_signal_init(loop, &sig->term);
    uv_signal_init(loop, &sig->intr);
    sig->term.data = sig->intr.data = sig;
    rc = uv_signal_start(&sig->term, on_signal, SIGTERM);
    if (rc == 0)
        rc = uv_signal_start(&sig->intr, on_signal, SIGINT);
    return rc;
}

void gs_stop_signals_close(struct gs_stop_signals *sig)
{
    uv_close((uv_handle_t *)&sig->term, NULL);
    uv_close((uv_handle_t *)&sig->intr, NULL);
}
