/*
 * test_ckpt.c: the asynchronous checkpoint writer: files appear under their step's name with
 * the staged bytes, only the newest `keep` stay, the newest is found again, a failed write is
 * reported by the next call and leaves earlier checkpoints alone.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trainer/ckpt.h"
#include "trainer/tensorfile.h"

static char dir[] = "/tmp/ckpt-test-XXXXXX";

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[96];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(ckpt, .init = setup, .fini = teardown);

static bool exists(uint64_t step)
{
    char p[96];

    snprintf(p, sizeof(p), "%s/ckpt-%08llu.gstf", dir, (unsigned long long)step);
    return access(p, F_OK) == 0;
}

/* Stages a one-tensor file holding step and submits it. */
static int save(struct trn_ckpt_writer *w, uint64_t step, uint64_t *stall)
{
    float v = (float)step;
    struct trn_tensor t = {.name = "step", .dtype = TRN_TF_F32, .rank = 1, .dims = {1}, .data = &v};
    size_t len = trn_tf_size(&t, 1);
    void *buf;
    int rc = trn_ckpt_stage(w, len, &buf, stall);

    cr_assert_eq(trn_tf_serialize(buf, len, &t, 1), 0);
    cr_assert_eq(trn_ckpt_submit(w, step, len), 0);
    return rc;
}

Test(ckpt, keeps_the_newest_and_finds_them)
{
    struct trn_ckpt_writer *w;
    struct trn_tf *tf;
    uint64_t stall = 0, step = 0;
    char *path = NULL;

    cr_assert_eq(trn_ckpt_find_latest(dir, &path, &step), -ENOENT);
    cr_assert_eq(trn_ckpt_writer_new(dir, 2, &w), 0);
    for (uint64_t s = 10; s <= 50; s += 10)
        cr_assert_eq(save(w, s, &stall), 0);
    cr_assert_eq(trn_ckpt_flush(w, &stall), 0);
    cr_assert(!exists(10) && !exists(20) && !exists(30));
    cr_assert(exists(40) && exists(50));
    cr_assert(strstr(trn_ckpt_last_path(w), "ckpt-00000050.gstf") != NULL);
    cr_assert_eq(trn_ckpt_find_latest(dir, &path, &step), 0);
    cr_assert_eq(step, 50);
    cr_assert_eq(trn_tf_open(path, &tf, NULL), 0);
    cr_assert_float_eq(*(const float *)trn_tf_find(tf, "step")->data, 50.0f, 0);
    trn_tf_close(tf);
    free(path);
    trn_ckpt_writer_free(w);
}

Test(ckpt, submit_without_stage_is_refused)
{
    struct trn_ckpt_writer *w;

    cr_assert_eq(trn_ckpt_writer_new(dir, 1, &w), 0);
    cr_assert_eq(trn_ckpt_submit(w, 1, 10), -EINVAL, "nothing staged");
    trn_ckpt_writer_free(w);
    cr_assert_eq(trn_ckpt_writer_new(dir, 0, &w), -EINVAL, "keep 0 would delete every one");
}

Test(ckpt, a_failed_write_is_reported_next_and_keeps_the_old_ones)
{
    struct trn_ckpt_writer *w;
    char sub[96], p[128];
    uint64_t step;
    char *path;

    snprintf(sub, sizeof(sub), "%s/run", dir);
    cr_assert_eq(trn_ckpt_writer_new(sub, 3, &w), 0);
    cr_assert_eq(save(w, 1, NULL), 0);
    cr_assert_eq(trn_ckpt_flush(w, NULL), 0);
    /* A directory where the file should go: rename cannot replace it. */
    snprintf(p, sizeof(p), "%s/ckpt-00000002.gstf", sub);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/ckpt-00000002.gstf/x", sub);
    cr_assert_eq(mkdir(p, 0755), 0);
    cr_assert_eq(save(w, 2, NULL), 0);
    cr_assert_lt(trn_ckpt_flush(w, NULL), 0, "the failure comes back");
    cr_assert_eq(trn_ckpt_flush(w, NULL), 0, "once");
    snprintf(p, sizeof(p), "%s/ckpt-00000001.gstf", sub);
    cr_assert_eq(access(p, F_OK), 0, "the previous checkpoint is still there");
    snprintf(p, sizeof(p), "%s/ckpt-00000002.gstf.tmp", sub);
    cr_assert_neq(access(p, F_OK), 0, "no temporary file left");
    cr_assert_eq(trn_ckpt_find_latest(sub, &path, &step), 0);
    free(path);
    trn_ckpt_writer_free(w);
}
