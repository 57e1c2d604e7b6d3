/*
 * live_daemon.c: a daemon under live_fuzz (live.h): started as a child whose stderr is a
 * pipe, read line by line by a thread of its own so that the daemon never blocks on its log
 * however much it writes.
 *
 * The reader keeps the last LF_TAIL_SIZE bytes (printed on failure), copies lines to
 * WORK/NAME.log up to LOG_COPY_MAX bytes, and watches for sanitizer reports: from the first
 * "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "AddressSanitizer:DEADLYSIGNAL" or
 * "runtime error:" line on, everything goes to d->report and d->sanitizer is set, which the
 * main thread checks after every batch. It also counts distinct log lines with their
 * values taken out (numbers, quoted text, values other than plain words): the daemons log
 * one line per event and per refusal, so the count of kinds reached is live_fuzz's measure
 * of how much of the daemon's handling it exercised (its "coverage"; no edge counters:
 * the daemons are the ASan build's, not instrumented for coverage).
 *
 * The lock guards the tail, the report and the template set; the flags are atomics.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/fuzz/live.h"

#define LOG_COPY_MAX (256u * 1024u * 1024u)
#define LINE_MAX_LEN 8192
#define TEMPLATES_MAX (1u << 16)

static bool is_report_start(const char *line)
{
    return strstr(line, "ERROR: AddressSanitizer") != NULL ||
           strstr(line, "ERROR: LeakSanitizer") != NULL ||
           strstr(line, "AddressSanitizer:DEADLYSIGNAL") != NULL ||
           strstr(line, "runtime error:") != NULL;
}

/* FNV-1a of the line with its values taken out: the kind of event, not its facts. */
static uint64_t template_of(const char *line)
{
    const char *p = strstr(line, " level=");
    uint64_t h = 1469598103934665603ull;
    bool in_value = false, plain = true;
    const char *value = NULL;

    p = p != NULL ? p : line;
    for (; *p != '\0'; p++) {
        char c = *p;

        if (c == '"') { /* quoted text: one token */
            const char *end = strchr(p + 1, '"');

            p = end != NULL ? end : p + strlen(p) - 1;
            c = '*';
        } else if (c >= '0' && c <= '9') {
            while (p[1] >= '0' && p[1] <= '9')
                p++;
            c = '#';
        }
        if (c == '=') {
            in_value = true;
            value = p + 1;
            plain = true;
        } else if (c == ' ') {
            in_value = false;
        } else if (in_value && !((c >= 'a' && c <= 'z') || c == '_')) {
            plain = false;
        }
        if (in_value && !plain && value != NULL) { /* not a word: the value's shape only */
            while (p[1] != '\0' && p[1] != ' ')
                p++;
            c = '*';
            in_value = false;
        }
        h = (h ^ (uint8_t)c) * 1099511628211ull;
    }
    return h != 0 ? h : 1;
}

static void add_template(struct lf_daemon *d, uint64_t h)
{
    size_t i;

    if (d->ntemplates * 2 >= d->templates_cap) {
        size_t cap = d->templates_cap > 0 ? d->templates_cap * 2 : 1024;
        uint64_t *grown = calloc(cap, sizeof(*grown));

        if (grown == NULL || cap > TEMPLATES_MAX * 2) {
            free(grown);
            return;
        }
        for (size_t k = 0; k < d->templates_cap; k++) {
            for (i = d->templates[k] % cap; d->templates[k] != 0 && grown[i] != 0;)
                i = (i + 1) % cap;
            if (d->templates[k] != 0)
                grown[i] = d->templates[k];
        }
        free(d->templates);
        d->templates = grown;
        d->templates_cap = cap;
    }
    for (i = h % d->templates_cap; d->templates[i] != 0; i = (i + 1) % d->templates_cap) {
        if (d->templates[i] == h)
            return;
    }
    d->templates[i] = h;
    d->ntemplates++;
}

static void keep_tail(struct lf_daemon *d, const char *line, size_t len)
{
    for (size_t i = 0; i <= len; i++) {
        d->tail[d->tail_pos] = i < len ? line[i] : '\n';
        d->tail_pos = (d->tail_pos + 1) % LF_TAIL_SIZE;
        if (d->tail_pos == 0)
            d->tail_wrapped = true;
    }
}

static void on_line(struct lf_daemon *d, const char *line, size_t len, size_t *copied)
{
    pthread_mutex_lock(&d->lock);
    keep_tail(d, line, len);
    if (!atomic_load(&d->sanitizer) && is_report_start(line))
        atomic_store(&d->sanitizer, true);
    if (atomic_load(&d->sanitizer) && d->report.len < LF_REPORT_SIZE) {
        (void)gs_buf_append(&d->report, line, len);
        (void)gs_buf_putc(&d->report, '\n');
    }
    add_template(d, template_of(line));
    pthread_mutex_unlock(&d->lock);
    if (d->log_copy != NULL && *copied < LOG_COPY_MAX) {
        fwrite(line, 1, len, d->log_copy);
        fputc('\n', d->log_copy);
        *copied += len + 1;
    }
    atomic_fetch_add(&d->lines, 1);
}

static void *reader(void *arg)
{
    struct lf_daemon *d = arg;
    char *line = malloc(LINE_MAX_LEN + 1);
    char buf[16384];
    size_t have = 0, copied = 0;
    ssize_t r;

    if (line == NULL)
        abort();
    while ((r = read(d->log_fd, buf, sizeof(buf))) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] != '\n' && have < LINE_MAX_LEN) {
                line[have++] = buf[i];
                continue;
            }
            line[have] = '\0';
            on_line(d, line, have, &copied);
            have = 0;
        }
    }
    if (have > 0) {
        line[have] = '\0';
        on_line(d, line, have, &copied);
    }
    if (d->log_copy != NULL)
        fflush(d->log_copy);
    free(line);
    atomic_store(&d->eof, true);
    return NULL;
}

void lf_daemon_init(struct lf_daemon *d)
{
    memset(d, 0, sizeof(*d));
    d->log_fd = -1;
    pthread_mutex_init(&d->lock, NULL);
}

int lf_daemon_start(struct lf_daemon *d, const char *name, char *const argv[], const char *log_path)
{
    int fds[2], devnull;

    d->name = name;
    d->exited = false;
    d->exit_status = 0;
    atomic_store(&d->eof, false);
    atomic_store(&d->sanitizer, false);
    gs_buf_reset(&d->report);
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    d->pid = fork();
    if (d->pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -errno;
    }
    if (d->pid == 0) {
        devnull = open("/dev/null", O_RDWR);
        if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    d->log_fd = fds[0];
    d->log_copy = log_path != NULL ? fopen(log_path, "a") : NULL;
    if (pthread_create(&d->reader, NULL, reader, d) != 0)
        return -EAGAIN;
    d->reader_started = true;
    return 0;
}

bool lf_daemon_alive(struct lf_daemon *d)
{
    int status;

    if (d->exited || d->pid <= 0)
        return false;
    if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
        d->exited = true;
        d->exit_status = status;
        return false;
    }
    return true;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

bool lf_daemon_stop(struct lf_daemon *d, int timeout_ms)
{
    uint64_t deadline = gs_clock_mono_ms() + (uint64_t)timeout_ms;
    bool by_itself = true;

    if (lf_daemon_alive(d)) {
        kill(d->pid, SIGTERM);
        while (lf_daemon_alive(d) && gs_clock_mono_ms() < deadline)
            sleep_ms(10);
        if (lf_daemon_alive(d)) {
            by_itself = false;
            kill(d->pid, SIGKILL);
            while (lf_daemon_alive(d))
                sleep_ms(10);
        }
    }
    /* Its stderr to the end (LeakSanitizer reports at exit), unless a child it left holds
     * the pipe open. */
    deadline = gs_clock_mono_ms() + 3000;
    while (d->reader_started && !atomic_load(&d->eof) && gs_clock_mono_ms() < deadline)
        sleep_ms(10);
    if (d->reader_started) {
        if (!atomic_load(&d->eof))
            pthread_cancel(d->reader);
        pthread_join(d->reader, NULL);
        d->reader_started = false;
    }
    if (d->log_fd >= 0)
        close(d->log_fd);
    d->log_fd = -1;
    if (d->log_copy != NULL)
        fclose(d->log_copy);
    d->log_copy = NULL;
    return by_itself;
}

void lf_daemon_release(struct lf_daemon *d)
{
    if (d->log_fd >= 0)
        close(d->log_fd);
    d->log_fd = -1;
    if (d->log_copy != NULL)
        fclose(d->log_copy);
    d->log_copy = NULL;
    gs_buf_release(&d->report);
    free(d->templates);
    d->templates = NULL;
    pthread_mutex_destroy(&d->lock);
}

size_t lf_daemon_templates(struct lf_daemon *d)
{
    size_t n;

    pthread_mutex_lock(&d->lock);
    n = d->ntemplates;
    pthread_mutex_unlock(&d->lock);
    return n;
}

void lf_daemon_describe(struct lf_daemon *d, char *out, size_t size)
{
    if (lf_daemon_alive(d))
        snprintf(out, size, "%s runs (pid %d)", d->name, (int)d->pid);
    else if (WIFSIGNALED(d->exit_status))
        snprintf(out, size, "%s was killed by signal %d (%s)", d->name, WTERMSIG(d->exit_status),
                 strsignal(WTERMSIG(d->exit_status)));
    else
        snprintf(out, size, "%s exited with status %d", d->name, WEXITSTATUS(d->exit_status));
}

int lf_daemon_stopped_well(struct lf_daemon *d, bool by_itself, char *why, size_t size)
{
    char state[160];

    lf_daemon_describe(d, state, sizeof(state));
    if (atomic_load(&d->sanitizer))
        snprintf(why, size, "%s printed a sanitizer report when it stopped (%s)", d->name, state);
    else if (!by_itself)
        snprintf(why, size, "%s did not exit on SIGTERM and was killed", d->name);
    else if (!WIFEXITED(d->exit_status) || WEXITSTATUS(d->exit_status) != 0)
        snprintf(why, size, "on SIGTERM, %s", state);
    else
        return 0;
    return -1;
}

void lf_daemon_print_tail(struct lf_daemon *d, FILE *f)
{
    pthread_mutex_lock(&d->lock);
    fprintf(f, "--- last lines of %s's stderr\n", d->name);
    if (d->tail_wrapped)
        fwrite(d->tail + d->tail_pos, 1, LF_TAIL_SIZE - d->tail_pos, f);
    fwrite(d->tail, 1, d->tail_pos, f);
    if (d->report.len > 0)
        fprintf(f, "--- %s's sanitizer report\n%s", d->name, d->report.data);
    fprintf(f, "---\n");
    pthread_mutex_unlock(&d->lock);
}
