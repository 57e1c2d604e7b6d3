/*
 * store_fixture.c: a fresh state database per test (see store_fixture.h).
 */
#include "store_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

char store_dir[64], store_path[128];
struct sched_store *store;

void store_fixture_setup(void)
{
    struct gs_error err;

    snprintf(store_dir, sizeof(store_dir), "/tmp/gsched-store-XXXXXX");
    cr_assert_not_null(mkdtemp(store_dir));
    snprintf(store_path, sizeof(store_path), "%s/state.db", store_dir);
    cr_assert_eq(sched_store_open(store_path, &store, &err), 0, "%s", err.msg);
}

void store_fixture_teardown(void)
{
    char cmd[128];

    sched_store_close(store);
    store = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", store_dir);
    cr_assert_eq(system(cmd), 0);
}
