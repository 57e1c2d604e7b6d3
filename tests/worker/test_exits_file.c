/*
 * test_exits_file.c: unacknowledged task exits on disk (worker/exits_file.h): what is added
 * loads back field for field after a crash (no close), acknowledged ones do not, none left
 * cuts the journal back to its header, a record a crash cut short or damaged ends the
 * journal there, the format of earlier workers loads, a damaged file of that format is
 * refused rather than misread, and a journal grown past its bound is compacted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/exits_file.h"

static char dir[64], path[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gsched-exits-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/node1.ledger.exits", dir);
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(exits_file, .init = setup, .fini = teardown);

static off_t file_size(void)
{
    struct stat st;

    cr_assert_eq(stat(path, &st), 0);
    return st.st_size;
}

static void free_exits(Gs__TaskExit **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gs__task_exit__free_unpacked(v[i], NULL);
    free(v);
}

/* Opens the journal as a worker started after a crash would, returning what it loaded. */
static struct wrk_exits_file *reopen(Gs__TaskExit ***v, size_t *n)
{
    struct wrk_exits_file *f = NULL;

    cr_assert_eq(wrk_exits_open(path, &f, v, n), 0);
    cr_assert_not_null(f);
    return f;
}

static void two_exits(Gs__TaskExit *a, Gs__TaskExit *b)
{
    a->job_id = 7, a->rank = 1, a->attempt = 2, a->exit_code = 3, a->node_name = "node1";
    a->end_reason = GS__END_REASON__END_REASON_OOM;
    a->max_rss_kib = 1234, a->cpu_time_ms = 56;
    b->job_id = 8, b->step = 1, b->signaled = true, b->term_signal = 9, b->launch_error = "x";
}

Test(exits_file, added_exits_load_back_and_acknowledged_ones_do_not)
{
    Gs__TaskExit a = GS__TASK_EXIT__INIT, b = GS__TASK_EXIT__INIT, **v = NULL;
    Gs__TaskExit *left_b[] = {&b};
    Gs__TaskRef ra = GS__TASK_REF__INIT, rb = GS__TASK_REF__INIT;
    Gs__TaskRef *acked_a[] = {&ra}, *acked_b[] = {&rb};
    struct wrk_exits_file *f, *g;
    size_t n = 99;

    f = reopen(&v, &n);
    cr_assert_eq(n, 0, "no file: none");
    cr_assert_null(v);
    cr_assert_eq(file_size(), 8, "just the header");
    two_exits(&a, &b);
    cr_assert_eq(wrk_exits_add(f, &a), 0);
    cr_assert_eq(wrk_exits_add(f, &b), 0);
    /* the worker "crashed": f still open, never closed */
    g = reopen(&v, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(v[0]->job_id, 7);
    cr_assert_eq(v[0]->rank, 1);
    cr_assert_eq(v[0]->attempt, 2);
    cr_assert_eq(v[0]->exit_code, 3);
    cr_assert_eq(v[0]->end_reason, GS__END_REASON__END_REASON_OOM);
    cr_assert_eq(v[0]->max_rss_kib, 1234);
    cr_assert_eq(v[0]->cpu_time_ms, 56);
    cr_assert_str_eq(v[0]->node_name, "node1");
    cr_assert_eq(v[1]->job_id, 8);
    cr_assert_eq(v[1]->step, 1);
    cr_assert(v[1]->signaled);
    cr_assert_eq(v[1]->term_signal, 9);
    cr_assert_str_eq(v[1]->launch_error, "x");
    free_exits(v, n);
    wrk_exits_close(f);
    f = g;
    ra.job_id = 7, ra.rank = 1, ra.attempt = 2;
    cr_assert_eq(wrk_exits_ack(f, acked_a, 1, left_b, 1), 0);
    g = reopen(&v, &n);
    cr_assert_eq(n, 1, "the acknowledged exit is gone");
    cr_assert_eq(v[0]->job_id, 8);
    free_exits(v, n);
    wrk_exits_close(f);
    f = g;
    rb.job_id = 8, rb.step = 1;
    cr_assert_eq(wrk_exits_ack(f, acked_b, 1, NULL, 0), 0);
    cr_assert_eq(file_size(), 8, "none left: back to the header");
    wrk_exits_close(f);
    f = reopen(&v, &n);
    cr_assert_eq(n, 0);
    wrk_exits_close(f);
}

/* A crash in the middle of an append: the record cut short, or (blocks never written) its
 * bytes wrong. The journal ends before it; the exits before it stay. */
Test(exits_file, a_torn_or_damaged_last_record_ends_the_journal)
{
    Gs__TaskExit a = GS__TASK_EXIT__INIT, b = GS__TASK_EXIT__INIT, **v = NULL;
    struct wrk_exits_file *f;
    size_t n = 0;
    off_t with_a;
    FILE *fp;

    two_exits(&a, &b);
    f = reopen(&v, &n);
    cr_assert_eq(wrk_exits_add(f, &a), 0);
    with_a = file_size();
    cr_assert_eq(wrk_exits_add(f, &b), 0);
    wrk_exits_close(f);
    cr_assert_eq(truncate(path, file_size() - 3), 0);
    f = reopen(&v, &n);
    cr_assert_eq(n, 1, "the torn record is dropped");
    cr_assert_eq(v[0]->job_id, 7);
    free_exits(v, n);
    cr_assert_eq(file_size(), with_a, "and the file rewritten without it");
    cr_assert_eq(wrk_exits_add(f, &b), 0);
    wrk_exits_close(f);
    fp = fopen(path, "r+");
    cr_assert_not_null(fp);
    cr_assert_eq(fseek(fp, with_a + 9, SEEK_SET), 0); /* past its length and checksum */
    fputc(0x55, fp);
    fclose(fp);
    f = reopen(&v, &n);
    cr_assert_eq(n, 1, "the record that fails its checksum is dropped");
    cr_assert_eq(v[0]->job_id, 7);
    free_exits(v, n);
    wrk_exits_close(f);
}

/* Earlier workers wrote one packed NodeRegister: an upgraded worker still reports those. */
Test(exits_file, the_format_of_earlier_workers_loads)
{
    Gs__TaskExit a = GS__TASK_EXIT__INIT, b = GS__TASK_EXIT__INIT, **v = NULL;
    Gs__TaskExit *both[] = {&a, &b};
    Gs__NodeRegister msg = GS__NODE_REGISTER__INIT;
    struct wrk_exits_file *f;
    uint8_t buf[512];
    size_t len, n = 0;
    FILE *fp;

    two_exits(&a, &b);
    msg.unacked_exits = both;
    msg.n_unacked_exits = 2;
    len = gs__node_register__get_packed_size(&msg);
    cr_assert_lt(len, sizeof(buf));
    gs__node_register__pack(&msg, buf);
    fp = fopen(path, "w");
    cr_assert_not_null(fp);
    cr_assert_eq(fwrite(buf, 1, len, fp), len);
    fclose(fp);
    f = reopen(&v, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(v[0]->job_id, 7);
    cr_assert_eq(v[0]->max_rss_kib, 1234);
    cr_assert_str_eq(v[1]->launch_error, "x");
    free_exits(v, n);
    wrk_exits_close(f);
    f = reopen(&v, &n);
    cr_assert_eq(n, 2, "rewritten as a journal, they load again");
    free_exits(v, n);
    wrk_exits_close(f);
}

Test(exits_file, a_damaged_file_is_refused)
{
    Gs__TaskExit **v = (Gs__TaskExit **)1;
    struct wrk_exits_file *f = (struct wrk_exits_file *)1;
    size_t n = 1;
    FILE *fp = fopen(path, "w");

    cr_assert_not_null(fp);
    fputs("\xff\xff\xff\xff garbage", fp);
    fclose(fp);
    cr_assert_eq(wrk_exits_open(path, &f, &v, &n), -EBADMSG);
    cr_assert_null(f);
    cr_assert_null(v);
    cr_assert_eq(n, 0);
    cr_assert_eq(file_size(), 12, "left as it was");
}

/* gschedd away for long while exits keep being acknowledged around one that is not: the
 * acknowledgements alone would grow the journal without bound. */
Test(exits_file, a_journal_past_its_bound_is_compacted)
{
    Gs__TaskExit keep = GS__TASK_EXIT__INIT, **v = NULL;
    Gs__TaskExit *left[] = {&keep};
    Gs__TaskRef ref = GS__TASK_REF__INIT;
    Gs__TaskRef *refs[] = {&ref};
    struct wrk_exits_file *f;
    size_t n = 0, last = 0;
    bool compacted = false;

    keep.job_id = 1;
    f = reopen(&v, &n);
    cr_assert_eq(wrk_exits_add(f, &keep), 0);
    /* acknowledgements of other exits (their own records left out: only the size counts) */
    for (uint64_t id = 2; id < 1000000 && !compacted; id++) {
        size_t size;

        ref.job_id = id;
        cr_assert_eq(wrk_exits_ack(f, refs, 1, left, 1), 0);
        size = wrk_exits_size(f);
        cr_assert_leq(size, WRK_EXITS_COMPACT, "the journal outgrew its bound: %zu", size);
        compacted = size < last;
        last = size;
    }
    cr_assert(compacted, "never compacted");
    cr_assert_eq(file_size(), (off_t)wrk_exits_size(f));
    wrk_exits_close(f);
    f = reopen(&v, &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0]->job_id, 1);
    free_exits(v, n);
    wrk_exits_close(f);
}
