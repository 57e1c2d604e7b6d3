/*
 * store_fixture.h: what the tests of the SQLite store share (test_store.c,
 * test_store_reads.c): a database in a new temporary directory, opened before each test
 * (store_fixture_setup as the suite's .init) and closed and removed after it
 * (store_fixture_teardown as .fini).
 */
#ifndef TESTS_SCHEDULER_STORE_FIXTURE_H
#define TESTS_SCHEDULER_STORE_FIXTURE_H

#include "scheduler/store.h"

extern char store_dir[64], store_path[128];
extern struct sched_store *store;

void store_fixture_setup(void);
void store_fixture_teardown(void);

#endif
