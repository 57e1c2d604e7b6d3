/*
 * sessions.c: the relayed CLI sessions' table (see sessions.h). A list: a node has a few
 * CLI calls in flight at a time, one per srun step or scontrol of its jobs.
 */
#include "worker/sessions.h"

#include <stdlib.h>

void wrk_sessions_init(struct wrk_sessions *t)
{
    t->head = NULL;
    t->last_id = 0;
    t->n = 0;
}

void wrk_sessions_release(struct wrk_sessions *t)
{
    for (struct wrk_session *s = t->head, *next; s != NULL; s = next) {
        next = s->next;
        free(s);
    }
    t->head = NULL;
    t->n = 0;
}

struct wrk_session *wrk_sessions_open(struct wrk_sessions *t, void *conn, uid_t uid, gid_t gid)
{
    struct wrk_session *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->uid = uid;
    s->gid = gid;
    s->conn = conn;
    s->next = t->head;
    t->head = s;
    t->n++;
    return s;
}

uint64_t wrk_sessions_number(struct wrk_sessions *t, struct wrk_session *s)
{
    if (s->id == 0)
        s->id = ++t->last_id;
    return s->id;
}

struct wrk_session *wrk_sessions_find(const struct wrk_sessions *t, uint64_t id)
{
    if (id == 0)
        return NULL;
    for (struct wrk_session *s = t->head; s != NULL; s = s->next) {
        if (s->id == id)
            return s;
    }
    return NULL;
}

void wrk_sessions_remove(struct wrk_sessions *t, struct wrk_session *s)
{
    for (struct wrk_session **p = &t->head; *p != NULL; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            t->n--;
            free(s);
            return;
        }
    }
}

size_t wrk_sessions_count(const struct wrk_sessions *t)
{
    return t->n;
}
