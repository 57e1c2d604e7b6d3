/*
 * offload.c: blocking calls on threads of their own (offload.h). A thread per call, made
 * when the call starts and detached: the calls this serves are rare (a `gsched logs`
 * request) and may block for minutes, so a fixed pool would only move the queueing problem
 * of libuv's pool here, and making a thread costs tens of microseconds next to a file read.
 *
 * The struct is shared between the loop and the calls' threads, so it lives until both the
 * async handle is closed and no call is outstanding; its lock guards the ready list, the
 * count and the closed flag. uv_async_send is called under the lock while closed is false,
 * and closed is set under the lock before uv_close, so no thread wakes a closed handle.
 */
#include "worker/offload.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

struct call {
    struct call *next;
    struct wrk_offload *o;
    wrk_offload_work_cb work;
    wrk_offload_done_cb done;
    wrk_offload_drop_cb drop;
    void *data;
};

struct wrk_offload {
    uv_async_t async;
    pthread_mutex_t lock;
    struct call *ready, **ready_tail; /* returned, waiting for the loop */
    unsigned outstanding;             /* calls between run and done or drop */
    unsigned max_calls;
    bool closed;        /* no done any more */
    bool handle_closed; /* the async handle's close callback ran */
    void (*closed_cb)(void *data);
    void *closed_data;
};

static void destroy(struct wrk_offload *o)
{
    pthread_mutex_destroy(&o->lock);
    free(o);
}

/* Takes the ready list (and their count off outstanding). Under the lock. */
static struct call *take_ready(struct wrk_offload *o)
{
    struct call *list = o->ready;

    for (struct call *c = list; c != NULL; c = c->next)
        o->outstanding--;
    o->ready = NULL;
    o->ready_tail = &o->ready;
    return list;
}

static void on_ready(uv_async_t *async)
{
    struct wrk_offload *o = async->data;
    struct call *list, *next;

    pthread_mutex_lock(&o->lock);
    list = take_ready(o);
    pthread_mutex_unlock(&o->lock);
    for (struct call *c = list; c != NULL; c = next) {
        next = c->next;
        /* A done may close the offload; the rest of the list is then dropped. o stays valid
         * until its handle's close callback, which runs on a later turn of the loop. */
        if (o->closed)
            c->drop(c->data);
        else
            c->done(c->data);
        free(c);
    }
}

static void *call_main(void *arg)
{
    struct call *c = arg;
    struct wrk_offload *o = c->o;
    bool dropped = false, last = false;

    c->work(c->data);
    pthread_mutex_lock(&o->lock);
    if (o->closed) {
        dropped = true;
        o->outstanding--;
        last = o->handle_closed && o->outstanding == 0;
    } else {
        c->next = NULL;
        *o->ready_tail = c;
        o->ready_tail = &c->next;
        uv_async_send(&o->async); /* c is the loop's from here on */
    }
    pthread_mutex_unlock(&o->lock);
    if (dropped) {
        c->drop(c->data);
        free(c);
        if (last)
            destroy(o);
    }
    return NULL;
}

int wrk_offload_new(uv_loop_t *loop, unsigned max_calls, struct wrk_offload **ret)
{
    struct wrk_offload *o;
    int rc;

    if (max_calls == 0)
        return -EINVAL;
    o = calloc(1, sizeof(*o));
    if (o == NULL)
        return -ENOMEM;
    rc = -pthread_mutex_init(&o->lock, NULL);
    if (rc < 0) {
        free(o);
        return rc;
    }
    rc = uv_async_init(loop, &o->async, on_ready);
    if (rc < 0) {
        destroy(o);
        return rc;
    }
    o->async.data = o;
    o->ready_tail = &o->ready;
    o->max_calls = max_calls;
    *ret = o;
    return 0;
}

/* Makes c's thread, detached and with every signal blocked, so that the loop's signal
 * handlers keep running on the loop's thread alone. */
static int start_thread(struct call *c)
{
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_t t;
    int rc;

    rc = pthread_attr_init(&attr);
    if (rc != 0)
        return -rc;
    rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (rc == 0)
        rc = pthread_create(&t, &attr, call_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return -rc;
}

int wrk_offload_run(struct wrk_offload *o, wrk_offload_work_cb work, wrk_offload_done_cb done,
                    wrk_offload_drop_cb drop, void *data)
{
    struct call *c;
    int rc = 0;

    pthread_mutex_lock(&o->lock);
    if (o->closed)
        rc = -ESHUTDOWN;
    else if (o->outstanding >= o->max_calls)
        rc = -EBUSY;
    else
        o->outstanding++;
    pthread_mutex_unlock(&o->lock);
    if (rc < 0)
        return rc;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        rc = -ENOMEM;
    else {
        *c = (struct call){.o = o, .work = work, .done = done, .drop = drop, .data = data};
        rc = start_thread(c);
    }
    if (rc < 0) {
        free(c);
        pthread_mutex_lock(&o->lock);
        o->outstanding--;
        pthread_mutex_unlock(&o->lock);
    }
    return rc;
}

unsigned wrk_offload_pending(struct wrk_offload *o)
{
    unsigned n;

    pthread_mutex_lock(&o->lock);
    n = o->outstanding;
    pthread_mutex_unlock(&o->lock);
    return n;
}

static void on_handle_closed(uv_handle_t *handle)
{
    struct wrk_offload *o = handle->data;
    void (*closed)(void *data) = o->closed_cb;
    void *data = o->closed_data;
    bool last;

    pthread_mutex_lock(&o->lock);
    o->handle_closed = true;
    last = o->outstanding == 0;
    pthread_mutex_unlock(&o->lock);
    if (last)
        destroy(o);
    if (closed != NULL)
        closed(data);
}

void wrk_offload_close(struct wrk_offload *o, void (*closed)(void *data), void *data)
{
    struct call *list, *next;

    pthread_mutex_lock(&o->lock);
    o->closed = true;
    list = take_ready(o);
    pthread_mutex_unlock(&o->lock);
    for (struct call *c = list; c != NULL; c = next) {
        next = c->next;
        c->drop(c->data);
        free(c);
    }
    o->closed_cb = closed;
    o->closed_data = data;
    uv_close((uv_handle_t *)&o->async, on_handle_closed);
}
