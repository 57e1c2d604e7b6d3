/*
 * test_pmi.c: the PMI server of srun --mpi=pmi2 steps (worker/pmi.h), driven over its
 * sockets in both wire protocols, as MPICH's PMI-1 client and Slurm's libpmi2 drive it: a
 * step of 4 ranks laid out cyclic over two nodes, this node holding ranks 0 and 2;
 * gschedd's side of the fences is played by the test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/clock.h"
#include "worker/pmi.h"

#define PMI_TEST_LINE 4096

struct rec {
    int fences;
    uint32_t seq;
    uint8_t part[4096];
    size_t len;
    int aborts, abort_status;
    char abort_msg[64];
    bool fail_now; /* no gschedd: the fence fails as it is sent */
    struct wrk_pmi *p;
};

static uv_loop_t loop;
static struct rec rec;
static struct wrk_pmi *pmi;
static const uint32_t cyclic[] = {0, 1, 0, 1};
static const char *const nodes[] = {"n0", "n1"};
static int fd0 = -1, fd2 = -1;

static void on_fence(void *data, uint64_t job_id, uint32_t step, uint32_t attempt, uint32_t seq,
                     const void *bytes, size_t len)
{
    struct rec *r = data;

    cr_assert_eq(job_id, 7);
    cr_assert_eq(step, 1);
    cr_assert_eq(attempt, 3);
    cr_assert_leq(len, sizeof(r->part));
    r->fences++;
    r->seq = seq;
    if (len > 0)
        memcpy(r->part, bytes, len);
    r->len = len;
    if (r->fail_now)
        cr_assert_eq(wrk_pmi_fence_done(r->p, job_id, step, seq, -ENOTCONN, NULL, 0), 0);
}

static void on_abort(void *data, uint64_t job_id, uint32_t step, int status, const char *msg)
{
    struct rec *r = data;

    cr_assert_eq(job_id, 7);
    cr_assert_eq(step, 1);
    snprintf(r->abort_msg, sizeof(r->abort_msg), "%s", msg);
    r->aborts++;
    r->abort_status = status;
}

static void setup(void)
{
    struct wrk_pmix_step s = {.job_id = 7,
                              .step = 1,
                              .attempt = 3,
                              .nodes = nodes,
                              .nnodes = 2,
                              .here = 0,
                              .rank_nodes = cyclic,
                              .nranks = 4};
    struct gs_error err;
    char **env = NULL;

    memset(&rec, 0, sizeof(rec));
    cr_assert_eq(uv_loop_init(&loop), 0);
    cr_assert_eq(wrk_pmi_new(&loop, on_fence, on_abort, &rec, &pmi), 0);
    rec.p = pmi;
    gs_error_clear(&err);
    cr_assert_eq(wrk_pmi_step_add(pmi, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(wrk_pmi_task(pmi, 7, 1, 0, &fd0, &env), 0);
    wrk_pmix_env_free(env);
    cr_assert_eq(wrk_pmi_task(pmi, 7, 1, 2, &fd2, &env), 0);
    wrk_pmix_env_free(env);
}

static void teardown(void)
{
    wrk_pmi_close(pmi);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
    if (fd0 >= 0)
        close(fd0);
    if (fd2 >= 0)
        close(fd2);
    fd0 = fd2 = -1;
}

/* Runs the loop until fd has a whole line (returned, newline cut) or reached end of file
 * (NULL); fails past 5 s. */
static char *read_line(int fd)
{
    static char line[PMI_TEST_LINE];
    size_t len = 0;
    uint64_t deadline = gs_clock_mono_ms() + 5000;

    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        ssize_t n;

        uv_run(&loop, UV_RUN_NOWAIT);
        if (poll(&pfd, 1, 10) == 1) {
            n = read(fd, line + len, 1); /* a byte at a time: never past the line */
            if (n <= 0)
                return NULL;
            if (line[len] == '\n') {
                line[len] = '\0';
                return line;
            }
            cr_assert_lt(++len, sizeof(line) - 1, "answer too long");
        }
        cr_assert_lt(gs_clock_mono_ms(), deadline, "no answer within 5 s");
    }
}

static void send_line(int fd, const char *text)
{
    size_t len = strlen(text);

    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    cr_assert_eq(write(fd, "\n", 1), 1);
}

static char *ask(int fd, const char *text)
{
    send_line(fd, text);
    return read_line(fd);
}

/* Runs the loop a little, for requests without an answer. */
static void settle(void)
{
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
}

static void expect(int fd, const char *text, const char *want)
{
    char *got = ask(fd, text);

    cr_assert_not_null(got, "%s: end of file", text);
    cr_assert_str_eq(got, want, "%s", text);
}

/* A fence part's record, as a worker sends it. */
static size_t record(uint8_t *out, const char *key, const char *value)
{
    size_t kl = strlen(key), vl = strlen(value), at = 0;

    out[at++] = (uint8_t)kl, out[at++] = 0, out[at++] = 0, out[at++] = 0;
    memcpy(out + at, key, kl), at += kl;
    out[at++] = (uint8_t)vl, out[at++] = 0, out[at++] = 0, out[at++] = 0;
    memcpy(out + at, value, vl), at += vl;
    return at;
}

Test(pmi, process_mapping_says_blocks_of_ranks_per_node)
{
    static const uint32_t block[] = {0, 0, 1, 1}, uneven[] = {0, 0, 0, 1, 1}, one[] = {0},
                          back[] = {1, 0, 1, 2};
    char out[128];

    cr_assert_eq(wrk_pmi_process_mapping(block, 4, out, sizeof(out)), 0);
    cr_assert_str_eq(out, "(vector,(0,2,2))");
    cr_assert_eq(wrk_pmi_process_mapping(cyclic, 4, out, sizeof(out)), 0);
    cr_assert_str_eq(out, "(vector,(0,2,1),(0,2,1))");
    cr_assert_eq(wrk_pmi_process_mapping(uneven, 5, out, sizeof(out)), 0);
    cr_assert_str_eq(out, "(vector,(0,1,3),(1,1,2))");
    cr_assert_eq(wrk_pmi_process_mapping(one, 1, out, sizeof(out)), 0);
    cr_assert_str_eq(out, "(vector,(0,1,1))");
    cr_assert_eq(wrk_pmi_process_mapping(back, 4, out, sizeof(out)), 0);
    cr_assert_str_eq(out, "(vector,(1,1,1),(0,3,1))");
    cr_assert_eq(wrk_pmi_process_mapping(cyclic, 4, out, 12), -ENOSPC);
}

Test(pmi, tasks_get_their_socket_and_variables_on_their_node_only, .init = setup, .fini = teardown)
{
    char **env = NULL;
    int fd = -1;

    cr_assert_eq(wrk_pmi_task(pmi, 7, 1, 1, &fd, &env), -EINVAL, "rank 1 is on n1");
    cr_assert_eq(wrk_pmi_task(pmi, 7, 1, 0, &fd, &env), -EEXIST);
    cr_assert_eq(wrk_pmi_task(pmi, 7, 2, 0, &fd, &env), -ENOENT);
    wrk_pmi_step_end(pmi, 7, 1);
    cr_assert_null(read_line(fd0), "the step's end closes its sockets");
    cr_assert_eq(wrk_pmi_task(pmi, 7, 1, 0, &fd, &env), -ENOENT);
}

Test(pmi, variables_name_the_socket_rank_size_and_space)
{
    struct wrk_pmix_step s = {.job_id = 9,
                              .step = 3,
                              .nodes = nodes,
                              .nnodes = 2,
                              .here = 1,
                              .rank_nodes = cyclic,
                              .nranks = 4};
    struct wrk_pmi *p;
    struct gs_error err;
    char **env = NULL, want[32];
    int fd = -1;

    cr_assert_eq(uv_loop_init(&loop), 0);
    cr_assert_eq(wrk_pmi_new(&loop, on_fence, on_abort, &rec, &p), 0);
    gs_error_clear(&err);
    cr_assert_eq(wrk_pmi_step_add(p, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(wrk_pmi_step_add(p, &s, &err), -EEXIST);
    cr_assert_eq(wrk_pmi_task(p, 9, 3, 3, &fd, &env), 0);
    snprintf(want, sizeof(want), "PMI_FD=%d", fd);
    cr_assert_str_eq(env[0], want);
    cr_assert_str_eq(env[1], "PMI_RANK=3");
    cr_assert_str_eq(env[2], "PMI_SIZE=4");
    cr_assert_str_eq(env[3], "PMI_JOBID=gsched.9.2");
    cr_assert_null(env[4]);
    wrk_pmix_env_free(env);
    close(fd);
    wrk_pmi_close(p);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(pmi, init_and_the_step_facts_answer_as_mpich_expects, .init = setup, .fini = teardown)
{
    expect(fd0, "cmd=init pmi_version=1 pmi_subversion=1",
           "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    expect(fd0, "cmd=init pmi_version=3 pmi_subversion=0",
           "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1");
    expect(fd0, "cmd=get_maxes", "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024");
    expect(fd0, "cmd=get_appnum", "cmd=appnum rc=0 appnum=0");
    expect(fd2, "cmd=get_my_kvsname", "cmd=my_kvsname rc=0 kvsname=gsched.7.0");
    expect(fd2, "cmd=get_universe_size", "cmd=universe_size rc=0 size=4");
    expect(fd2, "cmd=get kvsname=gsched.7.0 key=PMI_process_mapping",
           "cmd=get_result rc=0 value=(vector,(0,2,1),(0,2,1))");
    expect(fd0, "cmd=publish_name service=s port=p",
           "cmd=publish_result rc=-1 msg=gsched_does_not_serve_PMI_names");
    expect(fd0, "cmd=lookup_name service=s",
           "cmd=lookup_result rc=-1 "
           "msg=gsched_does_not_serve_PMI_names");
    send_line(fd0, "mcmd=spawn");
    send_line(fd0, "nprocs=2");
    expect(fd0, "endcmd", "cmd=spawn_result rc=-1 errmsg=gsched_does_not_serve_PMI_spawn");
    expect(fd0, "cmd=frobnicate", "cmd=frobnicate_result rc=-1 msg=unknown_request");
    expect(fd0, "cmd=finalize", "cmd=finalize_ack rc=0");
}

Test(pmi, keys_put_on_every_node_are_there_after_the_barrier, .init = setup, .fini = teardown)
{
    uint8_t all[4096];
    size_t len;

    expect(fd0, "cmd=put kvsname=gsched.7.0 key=addr-0 value=AB01", "cmd=put_result rc=0");
    expect(fd0, "cmd=get kvsname=gsched.7.0 key=addr-0", "cmd=get_result rc=0 value=AB01");
    expect(fd2, "cmd=get kvsname=gsched.7.0 key=addr-1",
           "cmd=get_result rc=-1 msg=key_addr-1_not_found");
    expect(fd2, "cmd=put kvsname=other key=k value=v",
           "cmd=put_result rc=-1 msg=kvsname_is_not_this_step's_(gsched.7.0)");
    send_line(fd0, "cmd=barrier_in");
    settle();
    cr_assert_eq(rec.fences, 0, "rank 2 is not in the barrier yet");
    expect(fd2, "cmd=put kvsname=gsched.7.0 key=addr-2 value=CD23", "cmd=put_result rc=0");
    send_line(fd2, "cmd=barrier_in");
    settle();
    cr_assert_eq(rec.fences, 1);
    cr_assert_eq(rec.seq, 0);
    len = record(all, "addr-0", "AB01");
    len += record(all + len, "addr-2", "CD23");
    cr_assert_eq(rec.len, len, "this node's part: its two puts");
    cr_assert_arr_eq(rec.part, all, len);
    /* gschedd's answer: both nodes' parts, n1's after n0's. */
    len += record(all + len, "addr-1", "EF45");
    len += record(all + len, "addr-3", "6789");
    cr_assert_eq(wrk_pmi_fence_done(pmi, 7, 1, 0, 0, all, len), 0);
    cr_assert_str_eq(read_line(fd0), "cmd=barrier_out rc=0");
    cr_assert_str_eq(read_line(fd2), "cmd=barrier_out rc=0");
    expect(fd0, "cmd=get kvsname=gsched.7.0 key=addr-3", "cmd=get_result rc=0 value=6789");
    expect(fd2, "cmd=get kvsname=gsched.7.0 key=addr-0", "cmd=get_result rc=0 value=AB01");
    /* A second barrier: numbered 1, with nothing new to send; a key put again changes. */
    expect(fd2, "cmd=put kvsname=gsched.7.0 key=addr-0 value=0000", "cmd=put_result rc=0");
    send_line(fd0, "cmd=barrier_in");
    send_line(fd2, "cmd=barrier_in");
    settle();
    cr_assert_eq(rec.fences, 2);
    cr_assert_eq(rec.seq, 1);
    cr_assert_eq(wrk_pmi_fence_done(pmi, 7, 1, 0, 0, NULL, 0), 0, "an old answer is dropped");
    cr_assert_eq(wrk_pmi_fence_done(pmi, 7, 1, 1, 0, rec.part, rec.len), 0);
    cr_assert_str_eq(read_line(fd0), "cmd=barrier_out rc=0");
    cr_assert_str_eq(read_line(fd2), "cmd=barrier_out rc=0");
    expect(fd0, "cmd=get kvsname=gsched.7.0 key=addr-0", "cmd=get_result rc=0 value=0000");
    cr_assert_eq(wrk_pmi_fence_done(pmi, 8, 1, 0, 0, NULL, 0), -ENOENT, "not a PMI step");
}

Test(pmi, a_failed_or_bad_fence_fails_the_barrier, .init = setup, .fini = teardown)
{
    uint8_t cut[16];
    size_t len = record(cut, "k", "value");

    send_line(fd0, "cmd=barrier_in");
    send_line(fd2, "cmd=barrier_in");
    settle();
    cr_assert_eq(wrk_pmi_fence_done(pmi, 7, 1, 0, -ECONNABORTED, NULL, 0), 0);
    cr_assert_not_null(strstr(read_line(fd0), "cmd=barrier_out rc=-1 msg=barrier_failed"));
    cr_assert_not_null(strstr(read_line(fd2), "cmd=barrier_out rc=-1"));
    send_line(fd0, "cmd=barrier_in");
    send_line(fd2, "cmd=barrier_in");
    settle();
    cr_assert_eq(wrk_pmi_fence_done(pmi, 7, 1, 1, 0, cut, len - 1), 0, "a record cut short");
    cr_assert_not_null(strstr(read_line(fd0), "cmd=barrier_out rc=-1"));
    cr_assert_not_null(strstr(read_line(fd2), "cmd=barrier_out rc=-1"));
    send_line(fd0, "cmd=barrier_in");
    send_line(fd2, "cmd=barrier_in");
    settle();
    /* gschedd lost, and the next one does not take fences again (the worker says so) */
    cr_assert_eq(wrk_pmi_fence_done(pmi, 7, 1, rec.seq, -ENOTCONN, NULL, 0), 0);
    cr_assert_not_null(strstr(read_line(fd0), "cmd=barrier_out rc=-1"));
    cr_assert_not_null(strstr(read_line(fd2), "cmd=barrier_out rc=-1"));
    rec.fail_now = true; /* and no gschedd to send the next to */
    send_line(fd0, "cmd=barrier_in");
    send_line(fd2, "cmd=barrier_in");
    cr_assert_not_null(strstr(read_line(fd0), "cmd=barrier_out rc=-1"));
    cr_assert_not_null(strstr(read_line(fd2), "cmd=barrier_out rc=-1"));
    cr_assert_eq(rec.fences, 4);
}

Test(pmi, a_rank_that_leaves_the_barrier_is_not_counted, .init = setup, .fini = teardown)
{
    send_line(fd0, "cmd=barrier_in");
    settle();
    close(fd0); /* rank 0's task died in the barrier */
    fd0 = -1;
    settle();
    send_line(fd2, "cmd=barrier_in");
    settle();
    cr_assert_eq(rec.fences, 0, "one of two local ranks is in");
}

Test(pmi, abort_is_passed_on_with_its_code, .init = setup, .fini = teardown)
{
    send_line(fd2, "cmd=abort exitcode=5");
    settle();
    cr_assert_eq(rec.aborts, 1);
    cr_assert_eq(rec.abort_status, 5);
    cr_assert_str_eq(rec.abort_msg, "PMI_Abort");
}

Test(pmi, a_line_past_the_limit_or_without_cmd_closes_that_connection, .init = setup,
     .fini = teardown)
{
    static char big[70000];

    memset(big, 'x', sizeof(big) - 1);
    expect(fd2, "cmd=get_appnum", "cmd=appnum rc=0 appnum=0");
    cr_assert_eq(write(fd0, big, sizeof(big) - 1), (ssize_t)sizeof(big) - 1);
    cr_assert_null(read_line(fd0), "closed");
    expect(fd2, "cmd=get_appnum", "cmd=appnum rc=0 appnum=0");
    send_line(fd2, "key=value");
    cr_assert_null(read_line(fd2), "closed");
}

/* --- PMI-2 ------------------------------------------------------------------------------------ */

/* Turns fd's connection PMI-2, as a PMI-2 client's init does. */
static void init2(int fd)
{
    expect(fd, "cmd=init pmi_version=2 pmi_subversion=0",
           "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0");
}

static void send2(int fd, const char *text)
{
    char len[24];
    size_t n = strlen(text);

    snprintf(len, sizeof(len), "%-6zu", n);
    cr_assert_eq(write(fd, len, 6), 6);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
}

/* Runs the loop until fd has a whole PMI-2 answer (returned without its length) or reached
 * end of file (NULL); fails past 5 s. */
static char *read2(int fd)
{
    static char text[PMI_TEST_LINE];
    char len[7] = "";
    size_t want = 0, got = 0;
    uint64_t deadline = gs_clock_mono_ms() + 5000;

    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};

        uv_run(&loop, UV_RUN_NOWAIT);
        if (poll(&pfd, 1, 10) == 1) {
            ssize_t n =
                got < 6 ? read(fd, len + got, 6 - got) : read(fd, text + got - 6, want - (got - 6));

            if (n <= 0)
                return NULL;
            got += (size_t)n;
            if (got == 6) {
                want = strtoul(len, NULL, 10);
                cr_assert_lt(want, sizeof(text), "answer too long");
            }
            if (got >= 6 && got - 6 == want) {
                text[want] = '\0';
                return text;
            }
        }
        cr_assert_lt(gs_clock_mono_ms(), deadline, "no answer within 5 s");
    }
}

static void expect2(int fd, const char *text, const char *want)
{
    char *got;

    send2(fd, text);
    got = read2(fd);
    cr_assert_not_null(got, "%s: end of file", text);
    cr_assert_str_eq(got, want, "%s", text);
}

Test(pmi, pmi2_clients_init_and_learn_the_step, .init = setup, .fini = teardown)
{
    init2(fd2);
    expect2(fd2, "cmd=fullinit;pmirank=2;threaded=FALSE;",
            "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=2;size=4;appnum=0;"
            "debugged=FALSE;pmiverbose=FALSE;");
    expect2(fd2, "cmd=fullinit;pmirank=1;",
            "cmd=fullinit-response;rc=-1;errmsg=pmirank is not this task's rank (PMI_RANK);");
    expect2(fd2, "cmd=job-getid;thrid=7;", "cmd=job-getid-response;rc=0;jobid=gsched.7.0;thrid=7;");
    expect2(fd2, "cmd=info-getjobattr;key=PMI_process_mapping;",
            "cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,2,1),(0,2,1));");
    expect2(fd2, "cmd=info-getjobattr;key=universeSize;",
            "cmd=info-getjobattr-response;rc=0;found=TRUE;value=4;");
    expect2(fd2, "cmd=info-getjobattr;key=PMI_hwloc_xmlfile;",
            "cmd=info-getjobattr-response;rc=0;found=FALSE;");
    expect2(fd2, "cmd=spawn;ncmds=1;",
            "cmd=spawn-response;rc=-1;errmsg=gsched does not serve this PMI-2 request;");
    expect2(fd2, "cmd=finalize;", "cmd=finalize-response;rc=0;");
    send2(fd2, "nocmd;");
    cr_assert_null(read2(fd2), "a request without cmd closes the connection");
}

Test(pmi, pmi2_and_pmi1_ranks_share_the_space_and_its_fences, .init = setup, .fini = teardown)
{
    uint8_t all[256];
    size_t len;

    init2(fd0); /* rank 0 speaks PMI-2, rank 2 PMI-1 */
    expect2(fd0, "cmd=kvs-put;key=a;;b;value=x;;y;", "cmd=kvs-put-response;rc=0;");
    expect2(fd0, "cmd=kvs-get;jobid=gsched.7.0;srcid=-1;key=a;;b;",
            "cmd=kvs-get-response;rc=0;found=TRUE;value=x;;y;");
    expect2(fd0, "cmd=kvs-get;jobid=other.1;key=a;;b;", "cmd=kvs-get-response;rc=0;found=FALSE;");
    send2(fd0, "cmd=kvs-fence;thrid=3;");
    send_line(fd2, "cmd=barrier_in");
    settle();
    cr_assert_eq(rec.fences, 1);
    len = record(all, "a;b", "x;y");
    cr_assert_eq(rec.len, len);
    cr_assert_arr_eq(rec.part, all, len);
    len += record(all + len, "n1", "v1");
    cr_assert_eq(wrk_pmi_fence_done(pmi, 7, 1, 0, 0, all, len), 0);
    cr_assert_str_eq(read2(fd0), "cmd=kvs-fence-response;rc=0;thrid=3;");
    cr_assert_str_eq(read_line(fd2), "cmd=barrier_out rc=0");
    expect2(fd0, "cmd=kvs-get;key=n1;", "cmd=kvs-get-response;rc=0;found=TRUE;value=v1;");
    expect(fd2, "cmd=get kvsname=gsched.7.0 key=a;b", "cmd=get_result rc=0 value=x;y");
    send2(fd0, "cmd=kvs-fence;");
    send_line(fd2, "cmd=barrier_in");
    settle();
    cr_assert_eq(wrk_pmi_fence_done(pmi, 7, 1, rec.seq, -ENOTCONN, NULL, 0), 0);
    cr_assert_not_null(strstr(read2(fd0), "cmd=kvs-fence-response;rc=-1;errmsg=the fence failed"));
    cr_assert_not_null(read_line(fd2));
}

Test(pmi, pmi2_node_attributes_are_the_nodes_and_a_get_may_wait, .init = setup, .fini = teardown)
{
    init2(fd0);
    init2(fd2);
    expect2(fd0, "cmd=info-getnodeattr;key=shm;wait=FALSE;",
            "cmd=info-getnodeattr-response;rc=0;found=FALSE;");
    send2(fd0, "cmd=info-getnodeattr;key=shm;wait=TRUE;thrid=9;");
    settle();
    expect2(fd2, "cmd=info-putnodeattr;key=shm;value=/dev/shm/seg;",
            "cmd=info-putnodeattr-response;rc=0;");
    cr_assert_str_eq(read2(fd0), "cmd=info-getnodeattr-response;rc=0;found=TRUE;"
                                 "value=/dev/shm/seg;thrid=9;");
    expect2(fd2, "cmd=info-putnodeattr;key=shm;value=/dev/shm/new;",
            "cmd=info-putnodeattr-response;rc=0;");
    expect2(fd0, "cmd=info-getnodeattr;key=shm;",
            "cmd=info-getnodeattr-response;rc=0;found=TRUE;value=/dev/shm/new;");
    send2(fd0, "cmd=info-getnodeattr;key=never;wait=TRUE;");
    settle();
    close(fd0); /* its wait goes with it */
    fd0 = -1;
    settle();
    send2(fd2, "cmd=abort;isworld=TRUE;msg=bad input;");
    settle();
    cr_assert_eq(rec.aborts, 1);
    cr_assert_str_eq(rec.abort_msg, "bad input");
}

Test(pmi, pmi2_request_with_a_bad_length_closes_that_connection, .init = setup, .fini = teardown)
{
    init2(fd0);
    cr_assert_eq(write(fd0, "abcdef", 6), 6);
    cr_assert_null(read2(fd0));
}

Test(pmi, pmi2_waiting_gets_are_bounded, .init = setup, .fini = teardown)
{
    char req[64];

    init2(fd0);
    for (int i = 0; i < 4096; i++) {
        snprintf(req, sizeof(req), "cmd=info-getnodeattr;key=k%d;wait=TRUE;", i);
        send2(fd0, req);
        if (i % 16 == 0) /* the socket holds a few hundred small writes at most */
            settle();
    }
    expect2(fd0, "cmd=info-getnodeattr;key=one-more;wait=TRUE;",
            "cmd=info-getnodeattr-response;rc=-1;errmsg=too many gets waiting, or out of memory;");
    init2(fd2);
    expect2(fd2, "cmd=info-putnodeattr;key=k4095;value=v;", "cmd=info-putnodeattr-response;rc=0;");
    cr_assert_str_eq(read2(fd0), "cmd=info-getnodeattr-response;rc=0;found=TRUE;value=v;");
}
