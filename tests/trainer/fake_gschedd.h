/*
 * fake_gschedd.h: a stand-in gschedd on a Unix socket in a temporary directory, for the
 * tests of what a task sends from inside a job (report.h, kv.h). A thread accepts one
 * connection at a time: Hello both ways (its own with protocol minor `minor`), one request,
 * the reply its answer function writes, close. fake_gschedd_start also sets GSCHED_JOB_ID
 * to 7 and GSCHED_SOCKET to the socket; fake_gschedd_stop unsets them and removes it all.
 */
#ifndef TESTS_TRAINER_FAKE_GSCHEDD_H
#define TESTS_TRAINER_FAKE_GSCHEDD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/frame.h"

struct fake_gschedd;
/* Fills reply (request_id is set by the caller) for req; storage it points into must stay
 * valid until the next call. Runs on the fake's thread. */
typedef void (*fake_answer_fn)(struct fake_gschedd *f, const Gs__Envelope *req,
                               Gs__Envelope *reply);

struct fake_gschedd {
    char dir[32], path[80];
    int lfd;
    bool serve;     /* false: listen only, never accept (a stuck gschedd) */
    uint32_t minor; /* the protocol minor its Hello says */
    fake_answer_fn answer;
    void *data;
    atomic_bool stop;
    pthread_t thread;
};

/* serve false: listen only. minor 0: GS_PROTO_VERSION_MINOR. */
void fake_gschedd_start(struct fake_gschedd *f, bool serve, uint32_t minor, fake_answer_fn answer,
                        void *data);
void fake_gschedd_stop(struct fake_gschedd *f);

#endif
