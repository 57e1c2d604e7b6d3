/*
 * telemetry_helpers.h: what test_nvml, test_procstat and test_telemetry share: the fake
 * NVML's script file (tests/common/fake_nvml_script.c reads it at every call) and child
 * processes in sessions of their own, standing in for gsched tasks.
 */
#ifndef TEST_TELEMETRY_HELPERS_H
#define TEST_TELEMETRY_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A fresh script file, named in GSCHED_FAKE_NVML_SCRIPT, holding text. */
void script_create(const char *text);
/* Replaces the script as a running worker would see it change: a new file renamed over. */
void script_write(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void script_remove(void);

/*
 * Forks a child that calls setsid() (its pid is its session), keeps mib MiB resident and
 * then spins (busy) or sleeps until child_stop(); it dies with the test process and after
 * 60 seconds at the latest. Fork before the test's first sample: the child only makes
 * system calls, but a parent with threads had better not be copied mid-malloc.
 */
pid_t child_start(bool busy, size_t mib);
void child_stop(pid_t pid);

/* A short wait between two polls of something that has a deadline. */
void poll_pause(void);

#endif
