/*
 * journal.c: the scheduler's writer thread (see journal.h).
 *
 * Two lists guarded by one mutex: queued (loop -> writer) and finished (writer -> loop).
 * The writer takes the whole queue at once, which is what makes commits grouped: while one
 * fsync runs, new submits pile up and go out together in the next. Reads (sched_journal_read)
 * ride in the same queue, so they come back in order with the changes, but run after the
 * batch's commit and outside its transaction: a slow read never holds the write lock, and a
 * failed read fails alone.
 */
#include "scheduler/journal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/log.h"

struct change {
    struct change *next;
    sched_journal_apply_fn apply;
    sched_journal_done_fn done;
    void *data;
    int status;
    bool read; /* sched_journal_read: outside the transaction, after it */
};

struct sched_journal {
    uv_loop_t *loop;
    uv_async_t wakeup; /* writer -> loop: changes finished */
    uv_thread_t thread;
    uv_mutex_t lock;
    uv_cond_t cond;
    struct sched_store *store;
    struct change *queued, **queued_tail;     /* under lock */
    struct change *finished, **finished_tail; /* under lock */
    bool stopping;                            /* under lock */
    unsigned pending;                         /* loop thread only */
};

static void append(struct change ***tail, struct change *list)
{
    **tail = list;
    while (list != NULL) {
        *tail = &list->next;
        list = list->next;
    }
}

static int apply_all(struct sched_journal *j, struct change *batch)
{
    int rc = sched_store_begin(j->store);

    for (struct change *c = batch; rc == 0 && c != NULL; c = c->next)
        rc = c->read ? 0 : c->apply(j->store, c->data);
    if (rc == 0)
        rc = sched_store_commit(j->store);
    if (rc < 0)
        sched_store_rollback(j->store);
    return rc;
}

/* After a failed batch: each change alone, so only the bad one fails. */
static void apply_one_by_one(struct sched_journal *j, struct change *batch)
{
    for (struct change *c = batch; c != NULL; c = c->next) {
        struct change *next = c->next;

        if (c->read)
            continue;
        c->next = NULL;
        c->status = apply_all(j, c);
        c->next = next;
        if (c->status < 0)
            GS_LOG(GS_LOG_ERROR, "status=%d journal change failed", c->status);
    }
}

static void write_batch(struct sched_journal *j, struct change *batch)
{
    bool writes = false;
    int rc = 0;

    for (struct change *c = batch; c != NULL; c = c->next)
        writes = writes || !c->read;
    if (writes)
        rc = apply_all(j, batch);
    if (rc == 0) {
        for (struct change *c = batch; c != NULL; c = c->next)
            c->status = 0;
    } else {
        apply_one_by_one(j, batch);
    }
    for (struct change *c = batch; c != NULL; c = c->next) {
        if (c->read)
            c->status = c->apply(j->store, c->data);
    }
}

static void writer_main(void *arg)
{
    struct sched_journal *j = arg;

    uv_mutex_lock(&j->lock);
    for (;;) {
        struct change *batch;

        while (j->queued == NULL && !j->stopping)
            uv_cond_wait(&j->cond, &j->lock);
        if (j->queued == NULL && j->stopping)
            break;
        batch = j->queued;
        j->queued = NULL;
        j->queued_tail = &j->queued;
        uv_mutex_unlock(&j->lock);
        write_batch(j, batch);
        uv_mutex_lock(&j->lock);
        append(&j->finished_tail, batch);
        uv_async_send(&j->wakeup);
    }
    uv_mutex_unlock(&j->lock);
}

/* Loop thread: run the done callbacks of what the writer finished. */
static void on_wakeup(uv_async_t *handle)
{
    struct sched_journal *j = handle->data;
    struct change *list;

    uv_mutex_lock(&j->lock);
    list = j->finished;
    j->finished = NULL;
    j->finished_tail = &j->finished;
    uv_mutex_unlock(&j->lock);
    while (list != NULL) {
        struct change *c = list;

        list = c->next;
        j->pending--;
        if (c->done != NULL)
            c->done(c->status, c->data);
        free(c);
    }
}

struct sched_journal *sched_journal_new(uv_loop_t *loop, struct sched_store *store)
{
    struct sched_journal *j = calloc(1, sizeof(*j));

    if (j == NULL)
        return NULL;
    j->loop = loop;
    j->store = store;
    j->queued_tail = &j->queued;
    j->finished_tail = &j->finished;
    if (uv_mutex_init(&j->lock) < 0)
        goto fail_mutex;
    if (uv_cond_init(&j->cond) < 0)
        goto fail_cond;
    if (uv_async_init(loop, &j->wakeup, on_wakeup) < 0)
        goto fail_async;
    j->wakeup.data = j;
    if (uv_thread_create(&j->thread, writer_main, j) < 0) {
        uv_close((uv_handle_t *)&j->wakeup, NULL);
        goto fail_async;
    }
    return j;
fail_async:
    uv_cond_destroy(&j->cond);
fail_cond:
    uv_mutex_destroy(&j->lock);
fail_mutex:
    free(j);
    return NULL;
}

static int queue(struct sched_journal *j, sched_journal_apply_fn apply, sched_journal_done_fn done,
                 void *data, bool read)
{
    struct change *c = calloc(1, sizeof(*c));
    int rc = 0;

    if (c == NULL)
        return -ENOMEM;
    c->read = read;
    c->apply = apply;
    c->done = done;
    c->data = data;
    uv_mutex_lock(&j->lock);
    if (j->stopping) {
        rc = -ESHUTDOWN;
    } else {
        *j->queued_tail = c;
        j->queued_tail = &c->next;
        uv_cond_signal(&j->cond);
    }
    uv_mutex_unlock(&j->lock);
    if (rc < 0) {
        free(c);
        return rc;
    }
    j->pending++;
    return 0;
}

int sched_journal_submit(struct sched_journal *j, sched_journal_apply_fn apply,
                         sched_journal_done_fn done, void *data)
{
    return queue(j, apply, done, data, false);
}

int sched_journal_read(struct sched_journal *j, sched_journal_apply_fn read,
                       sched_journal_done_fn done, void *data)
{
    return queue(j, read, done, data, true);
}

unsigned sched_journal_pending(const struct sched_journal *j)
{
    return j->pending;
}

static void on_closed(uv_handle_t *handle)
{
    struct sched_journal *j = handle->data;

    uv_cond_destroy(&j->cond);
    uv_mutex_destroy(&j->lock);
    free(j);
}

void sched_journal_close(struct sched_journal *j)
{
    if (j == NULL)
        return;
    uv_mutex_lock(&j->lock);
    j->stopping = true;
    uv_cond_signal(&j->cond);
    uv_mutex_unlock(&j->lock);
    uv_thread_join(&j->thread);
    on_wakeup(&j->wakeup); /* the writer flushed everything: report it now */
    sched_store_close(j->store);
    j->store = NULL;
    uv_close((uv_handle_t *)&j->wakeup, on_closed);
}
