/*
 * sessions.h: the table of CLI sessions a worker relays to gschedd (worker/relay.c): one
 * entry per connection on the worker's CLI socket, under a session number that names it in
 * CliRelay frames both ways. A session is numbered when its first frame goes to gschedd, not
 * when its CLI connects: numbers start at 1 and only grow for the life of the table, so on
 * the one connection to gschedd they arrive in increasing order, and a frame for a session
 * that has ended never reaches a later one (gschedd relies on both: a number at or below the
 * highest it has seen on this worker's connection is no new session). Pure bookkeeping, no
 * I/O: the caller owns what conn points at.
 *
 * Caller-owned storage: wrk_sessions_init() before use, wrk_sessions_release() after (it
 * frees the entries, not their connections). Entries are freed by wrk_sessions_remove().
 * Not thread-safe: the worker's loop thread.
 */
#ifndef WRK_SESSIONS_H
#define WRK_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct wrk_session {
    struct wrk_session *next;
    uint64_t id; /* 0 until wrk_sessions_number() */
    uid_t uid;   /* the CLI process's, from SO_PEERCRED */
    gid_t gid;
    void *conn;       /* the CLI's connection (borrowed) */
    bool relayed;     /* a frame went to gschedd: it knows the session, tell it the end */
    bool ended_there; /* gschedd ended it (or is gone): nothing to tell it */
    bool closing;     /* its connection is closing: later frames for it are dropped */
};

struct wrk_sessions {
    struct wrk_session *head;
    uint64_t last_id; /* the highest number given */
    size_t n;
};

void wrk_sessions_init(struct wrk_sessions *t);
/* Frees every entry left (their connections are the caller's). */
void wrk_sessions_release(struct wrk_sessions *t);

/* A new entry, not numbered yet, or NULL when out of memory. */
struct wrk_session *wrk_sessions_open(struct wrk_sessions *t, void *conn, uid_t uid, gid_t gid);
/* Gives s the next number unless it has one; returns its number. */
uint64_t wrk_sessions_number(struct wrk_sessions *t, struct wrk_session *s);
/* The entry numbered id, or NULL (never numbered, removed, or id 0). */
struct wrk_session *wrk_sessions_find(const struct wrk_sessions *t, uint64_t id);
/* Unlinks and frees s, an entry of t. */
void wrk_sessions_remove(struct wrk_sessions *t, struct wrk_session *s);
size_t wrk_sessions_count(const struct wrk_sessions *t);

#endif
