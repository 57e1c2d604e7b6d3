/*
 * ledger.c: the worker's on-disk list of running process groups (see ledger.h).
 */
#define _DEFAULT_SOURCE /* killpg */

#include "worker/ledger.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

struct entry {
    pid_t pid;
    uint64_t start;
    uint64_t job_id;
    uint32_t step;
    uint32_t rank;
};

struct wrk_ledger {
    char *path;
    struct entry *v;
    size_t n, cap;
};

struct wrk_ledger *wrk_ledger_new(const char *path)
{
    struct wrk_ledger *l = calloc(1, sizeof(*l));

    if (l == NULL || (l->path = strdup(path)) == NULL) {
        free(l);
        return NULL;
    }
    return l;
}

void wrk_ledger_free(struct wrk_ledger *l)
{
    if (l == NULL)
        return;
    free(l->v);
    free(l->path);
    free(l);
}

uint64_t wrk_ledger_start_time(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long start = 0;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and ')': fields resume after the last ')'. */
    p = strrchr(buf, ')');
    if (p == NULL)
        return 0;
    /* The space after ")" opens field 3 (state); the one opening field 22 (starttime) is
     * the 20th. */
    for (int field = 3; field <= 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &start) != 1)
        return 0;
    return start;
}

static int write_file(const struct wrk_ledger *l)
{
    char tmp[4200];
    FILE *f;
    int rc = 0;

    if (l->n == 0)
        return unlink(l->path) < 0 && errno != ENOENT ? -errno : 0;
    snprintf(tmp, sizeof(tmp), "%s.tmp", l->path);
    f = fopen(tmp, "w");
    if (f == NULL)
        return -errno;
    for (size_t i = 0; i < l->n; i++) {
        const struct entry *e = &l->v[i];
        if (fprintf(f, "%d %" PRIu64 " %" PRIu64 " %" PRIu32 " %" PRIu32 "\n", (int)e->pid,
                    e->start, e->job_id, e->rank, e->step) < 0)
            rc = -EIO;
    }
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, l->path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int wrk_ledger_add(struct wrk_ledger *l, pid_t pid, uint64_t job_id, uint32_t step, uint32_t rank)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct entry *v = realloc(l->v, cap * sizeof(*v));

        if (v == NULL)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (struct entry){.pid = pid,
                                  .start = wrk_ledger_start_time(pid),
                                  .job_id = job_id,
                                  .step = step,
                                  .rank = rank};
    return write_file(l);
}

int wrk_ledger_remove(struct wrk_ledger *l, pid_t pid)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].pid == pid) {
            l->v[i] = l->v[--l->n];
            return write_file(l);
        }
    }
    return 0;
}

int wrk_ledger_read(const char *path, struct wrk_ledger_entry **ret, size_t *ret_n)
{
    struct wrk_ledger_entry *v = NULL, *grown;
    size_t n = 0, cap = 0;
    FILE *f = fopen(path, "r");
    char line[256];

    *ret = NULL;
    *ret_n = 0;
    if (f == NULL)
        return errno == ENOENT ? 0 : -errno;
    while (fgets(line, sizeof(line), f) != NULL) {
        struct wrk_ledger_entry e = {0};
        int pid;

        /* STEP is absent from the files of workers that predate steps: step 0. */
        if (sscanf(line, "%d %" SCNu64 " %" SCNu64 " %" SCNu32 " %" SCNu32, &pid, &e.start_time,
                   &e.job_id, &e.rank, &e.step) < 4)
            continue;
        e.pid = (pid_t)pid;
        if (n == cap) {
            cap = cap > 0 ? 2 * cap : 16;
            if ((grown = realloc(v, cap * sizeof(*v))) == NULL) {
                free(v);
                fclose(f);
                return -ENOMEM;
            }
            v = grown;
        }
        v[n++] = e;
    }
    fclose(f);
    *ret = v;
    *ret_n = n;
    return 0;
}

int wrk_ledger_end(const struct wrk_ledger_entry *v, size_t n, const char *what)
{
    int killed = 0;

    for (size_t i = 0; i < n; i++) {
        pid_t pid = v[i].pid;
        uint64_t now = pid > 1 ? wrk_ledger_start_time(pid) : 1;

        /* A live pid with another start time is someone else's now. With no process of
         * that pid left, a group of that id can only be ours: Linux hands out no pid that
         * is still some group's id, so the task's children are found even after their
         * leader died. */
        if (pid <= 1 || (now != 0 && now != v[i].start_time))
            continue;
        if (killpg(pid, SIGKILL) == 0) {
            killed++;
            GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%" PRIu32 " rank=%" PRIu32 " pid=%d %s",
                   v[i].job_id, v[i].step, v[i].rank, (int)pid, what);
        }
    }
    return killed;
}

int wrk_ledger_sweep(const char *path)
{
    struct wrk_ledger_entry *v = NULL;
    size_t n = 0;
    int rc = wrk_ledger_read(path, &v, &n);

    if (rc < 0)
        return rc;
    rc = wrk_ledger_end(v, n, "leftover task of a previous worker ended");
    free(v);
    unlink(path);
    return rc;
}
