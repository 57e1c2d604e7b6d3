/*
 * ledger.c: the worker's on-disk list of running process groups (see ledger.h), kept as a
 * journal of lines: a task's line is appended when it starts and "-PID" when it ends, and
 * the file is emptied when nothing runs, so that a task's start and end cost one short
 * write each rather than the whole list rewritten under a new name. The worker removes
 * entries in no order, so a file whose dead lines outnumber the live ones is rewritten with
 * the live ones alone past COMPACT_BYTES.
 */
#define _DEFAULT_SOURCE /* killpg */

#include "worker/ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/path.h"

#define LINE_MAX_LEN 96 /* "PID START JOB RANK STEP\n" at its longest is 78 */
#define COMPACT_BYTES (64u << 10)

struct entry {
    pid_t pid;
    uint64_t start;
    uint64_t job_id;
    uint32_t step;
    uint32_t rank;
};

struct wrk_ledger {
    char *path;
    int fd;            /* O_APPEND, from the first task on; -1 before */
    size_t file_bytes; /* what the file holds */
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
    l->fd = -1;
    return l;
}

void wrk_ledger_free(struct wrk_ledger *l)
{
    if (l == NULL)
        return;
    if (l->fd >= 0)
        close(l->fd);
    if (l->fd >= 0 && l->n == 0) /* a clean stop: nothing runs, no file */
        unlink(l->path);
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

static int format_entry(const struct entry *e, char *out, size_t size)
{
    return snprintf(out, size, "%d %" PRIu64 " %" PRIu64 " %" PRIu32 " %" PRIu32 "\n", (int)e->pid,
                    e->start, e->job_id, e->rank, e->step);
}

/* Opens the file (a fresh one) for appending, on the first task. */
static int open_file(struct wrk_ledger *l)
{
    if (l->fd >= 0)
        return 0;
    l->fd = open(l->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (l->fd < 0)
        return -errno;
    l->file_bytes = 0;
    return 0;
}

static int append(struct wrk_ledger *l, const char *line, size_t len)
{
    int rc = open_file(l);

    if (rc == 0)
        rc = gs_write_all(l->fd, line, len);
    if (rc == 0)
        l->file_bytes += len;
    return rc;
}

/* The live entries alone, written whole to a temporary file renamed over the journal, when
 * the removals have made it mostly dead lines. */
static int compact(struct wrk_ledger *l)
{
    char tmp[4200], line[LINE_MAX_LEN];
    size_t bytes = 0;
    int fd, rc = 0;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", l->path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    for (size_t i = 0; rc == 0 && i < l->n; i++) {
        int len = format_entry(&l->v[i], line, sizeof(line));

        rc = gs_write_all(fd, line, (size_t)len);
        bytes += (size_t)len;
    }
    if (rc == 0 && rename(tmp, l->path) < 0)
        rc = -errno;
    if (rc < 0) {
        close(fd);
        unlink(tmp);
        return rc;
    }
    close(l->fd);
    l->fd = fd;
    l->file_bytes = bytes;
    return 0;
}

int wrk_ledger_add(struct wrk_ledger *l, pid_t pid, uint64_t job_id, uint32_t step, uint32_t rank)
{
    char line[LINE_MAX_LEN];
    int len;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct entry *v = realloc(l->v, cap * sizeof(*v));

        if (v == NULL)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = (struct entry){.pid = pid,
                                .start = wrk_ledger_start_time(pid),
                                .job_id = job_id,
                                .step = step,
                                .rank = rank};
    len = format_entry(&l->v[l->n], line, sizeof(line));
    l->n++;
    return append(l, line, (size_t)len);
}

int wrk_ledger_remove(struct wrk_ledger *l, pid_t pid)
{
    char line[32];
    int len;

    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].pid != pid)
            continue;
        l->v[i] = l->v[--l->n];
        if (l->fd < 0)
            return 0;
        if (l->n == 0) { /* nothing runs: an empty file */
            if (ftruncate(l->fd, 0) < 0)
                return -errno;
            l->file_bytes = 0;
            return 0;
        }
        if (l->file_bytes > COMPACT_BYTES && l->file_bytes > 4 * l->n * LINE_MAX_LEN)
            return compact(l);
        len = snprintf(line, sizeof(line), "-%d\n", (int)pid);
        return append(l, line, (size_t)len);
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

        if (strchr(line, '\n') == NULL) /* cut short by a crash (or garbage): not a line */
            continue;
        if (line[0] == '-') { /* an ended task: its line goes (one live task per pid) */
            if (sscanf(line + 1, "%d", &pid) == 1) {
                for (size_t i = n; i-- > 0;) {
                    if (v[i].pid == (pid_t)pid) {
                        v[i] = v[--n];
                        break;
                    }
                }
            }
            continue;
        }
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
