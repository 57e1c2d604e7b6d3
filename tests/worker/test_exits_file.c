/*
 * test_exits_file.c: unacknowledged task exits on disk (worker/exits_file.h): what is saved
 * loads back field for field, saving none removes the file, no file loads as none, and a
 * damaged file is refused rather than misread.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

Test(exits_file, saved_exits_load_back_and_none_removes_the_file)
{
    Gs__TaskExit a = GS__TASK_EXIT__INIT, b = GS__TASK_EXIT__INIT;
    Gs__TaskExit *both[] = {&a, &b};
    Gs__NodeRegister *got = (Gs__NodeRegister *)1;

    cr_assert_eq(wrk_exits_load(path, &got), 0, "no file: none");
    cr_assert_null(got);
    a.job_id = 7, a.rank = 1, a.attempt = 2, a.exit_code = 3, a.node_name = "node1";
    a.end_reason = GS__END_REASON__END_REASON_OOM;
    b.job_id = 8, b.step = 1, b.signaled = true, b.term_signal = 9, b.launch_error = "x";
    cr_assert_eq(wrk_exits_save(path, both, 2), 0);
    cr_assert_eq(access(path, F_OK), 0);
    cr_assert_eq(wrk_exits_load(path, &got), 0);
    cr_assert_eq(got->n_unacked_exits, 2);
    cr_assert_eq(got->unacked_exits[0]->job_id, 7);
    cr_assert_eq(got->unacked_exits[0]->rank, 1);
    cr_assert_eq(got->unacked_exits[0]->attempt, 2);
    cr_assert_eq(got->unacked_exits[0]->exit_code, 3);
    cr_assert_eq(got->unacked_exits[0]->end_reason, GS__END_REASON__END_REASON_OOM);
    cr_assert_str_eq(got->unacked_exits[0]->node_name, "node1");
    cr_assert_eq(got->unacked_exits[1]->job_id, 8);
    cr_assert(got->unacked_exits[1]->signaled);
    cr_assert_eq(got->unacked_exits[1]->term_signal, 9);
    cr_assert_str_eq(got->unacked_exits[1]->launch_error, "x");
    gs__node_register__free_unpacked(got, NULL);
    cr_assert_eq(wrk_exits_save(path, NULL, 0), 0);
    cr_assert_neq(access(path, F_OK), 0, "no exits left: no file");
    cr_assert_eq(wrk_exits_save(path, NULL, 0), 0, "removing a file that is gone is fine");
}

Test(exits_file, a_damaged_file_is_refused)
{
    Gs__NodeRegister *got = NULL;
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    fputs("\xff\xff\xff\xff garbage", f);
    fclose(f);
    cr_assert_eq(wrk_exits_load(path, &got), -EBADMSG);
    cr_assert_null(got);
}
