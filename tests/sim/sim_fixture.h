/*
 * sim_fixture.h: helpers the simulator's tests share: a file with given contents in a
 * temporary directory (removed by the test's teardown), for the trace readers.
 */
#ifndef TESTS_SIM_FIXTURE_H
#define TESTS_SIM_FIXTURE_H

/* Writes text to a new file named name in a per-process temporary directory; returns its
 * path (static storage, valid until the next call). */
const char *sim_fixture_file(const char *name, const char *text);
/* Removes the files written and their directory. */
void sim_fixture_cleanup(void);

#endif
