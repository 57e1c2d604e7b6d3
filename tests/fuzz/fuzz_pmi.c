/*
 * fuzz_pmi.c: libFuzzer harness for the workers' PMI server (worker/pmi.h), which a root-run
 * gsched-workerd serves to every task of an srun --mpi=pmi2 step: what a task writes to its
 * PMI_FD socket is anything its user's program sends.
 *
 * First byte: bit 0 starts the connection in PMI-2 (the PMI-1 init asking for version 2 is
 * sent first), bits 1-7 the size of the writes, less one. The rest is written to a one-rank
 * step's socket in those pieces, the loop run between them; a barrier the input completes
 * is answered with the input itself as gschedd's joined parts, so that the part reader
 * (kv_take) sees it too. What the server answers is read and dropped. Then the socket is
 * closed and the step ended, and everything must be freed: LeakSanitizer checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "worker/pmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
    struct wrk_pmi *p;
    bool fenced;
    uint32_t seq;
};

static void on_fence(void *data, uint64_t job_id, uint32_t step, uint32_t attempt, uint32_t seq,
                     const void *bytes, size_t len)
{
    struct run *r = data;

    (void)job_id, (void)step, (void)attempt, (void)bytes, (void)len;
    r->fenced = true;
    r->seq = seq;
}

static void on_abort(void *data, uint64_t job_id, uint32_t step, int status, const char *msg)
{
    (void)data, (void)job_id, (void)step, (void)status;
    if (msg == NULL)
        abort(); /* the server always names an abort */
}

/* Runs the loop a few turns, reading and dropping what the server wrote to fd. */
static void turn(uv_loop_t *loop, int fd)
{
    char sink[4096];

    for (int i = 0; i < 4; i++) {
        uv_run(loop, UV_RUN_NOWAIT);
        while (read(fd, sink, sizeof(sink)) > 0)
            ;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const nodes[] = {"n0"};
    static const uint32_t rank_nodes[] = {0};
    static const char init2[] = "cmd=init pmi_version=2 pmi_subversion=0\n";
    struct wrk_pmix_step s = {
        .job_id = 1, .step = 1, .nodes = nodes, .nnodes = 1, .rank_nodes = rank_nodes, .nranks = 1};
    struct run r = {0};
    struct gs_error err;
    uv_loop_t loop;
    char **env = NULL;
    size_t piece;
    int fd = -1;

    if (size < 1)
        return 0;
    signal(SIGPIPE, SIG_IGN); /* as the worker does: a write after the server closed fails */
    piece = (size_t)(data[0] >> 1) + 1;
    if (uv_loop_init(&loop) != 0 || wrk_pmi_new(&loop, on_fence, on_abort, &r, &r.p) != 0)
        abort();
    gs_error_clear(&err);
    if (wrk_pmi_step_add(r.p, &s, &err) != 0 || wrk_pmi_task(r.p, 1, 1, 0, &fd, &env) != 0)
        abort();
    for (size_t i = 0; env[i] != NULL; i++)
        free(env[i]);
    free(env);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    if ((data[0] & 1) && write(fd, init2, sizeof(init2) - 1) != (ssize_t)sizeof(init2) - 1)
        abort();
    for (size_t at = 1; at < size; at += piece) {
        size_t n = size - at < piece ? size - at : piece;

        if (write(fd, data + at, n) < 0 && errno != EAGAIN)
            break; /* the server closed it */
        turn(&loop, fd);
        if (r.fenced) {
            r.fenced = false;
            wrk_pmi_fence_done(r.p, 1, 1, r.seq, 0, data + 1, size - 1);
        }
    }
    close(fd);
    turn(&loop, -1);
    wrk_pmi_step_end(r.p, 1, 1);
    wrk_pmi_close(r.p);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0)
        abort();
    return 0;
}
