/*
 * test_log.c: log lines are whole key=value lines with a timestamp, level and program name;
 * disabled levels cost no argument evaluation; overlong lines are cut, not split.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"

static int pipe_fds[2];

static void open_sink(void)
{
    cr_assert_eq(pipe(pipe_fds), 0);
}

static void close_sink(void)
{
    gs_log_setup("gsched", GS_LOG_INFO, 2);
    close(pipe_fds[0]);
    if (pipe_fds[1] >= 0)
        close(pipe_fds[1]);
}

/* Closes the write end and reads everything logged; the pipe's buffer holds a few lines. */
static size_t drain(char *out, size_t size)
{
    size_t len = 0;
    ssize_t n;

    gs_log_setup(NULL, GS_LOG_INFO, 2);
    close(pipe_fds[1]);
    pipe_fds[1] = -1;
    while (len < size - 1 && (n = read(pipe_fds[0], out + len, size - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    return len;
}

TestSuite(log, .init = open_sink, .fini = close_sink);

Test(log, writes_one_key_value_line_per_event)
{
    char out[4096];

    gs_log_setup("gschedd", GS_LOG_INFO, pipe_fds[1]);
    GS_LOG(GS_LOG_INFO, "job=%d node=%s placed", 42, "n3");
    drain(out, sizeof(out));
    cr_assert(strncmp(out, "ts=", 3) == 0, "got: %s", out);
    cr_assert_not_null(strstr(out, "Z level=info prog=gschedd job=42 node=n3 placed\n"), "got: %s",
                       out);
    cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "exactly one line: %s", out);
}

static int evaluated;

static int side_effect(void)
{
    evaluated++;
    return 1;
}

Test(log, skips_argument_evaluation_below_threshold)
{
    char out[256];

    gs_log_setup("t", GS_LOG_WARN, pipe_fds[1]);
    evaluated = 0;
    GS_LOG(GS_LOG_DEBUG, "x=%d", side_effect());
    GS_LOG(GS_LOG_INFO, "x=%d", side_effect());
    cr_assert_eq(evaluated, 0);
    GS_LOG(GS_LOG_ERROR, "x=%d", side_effect());
    cr_assert_eq(evaluated, 1);
    drain(out, sizeof(out));
    cr_assert_not_null(strstr(out, "level=error"));
}

Test(log, cuts_overlong_lines_and_keeps_them_whole)
{
    static char big[8192], out[8192];
    size_t n;

    memset(big, 'k', sizeof(big) - 1);
    gs_log_setup("t", GS_LOG_DEBUG, pipe_fds[1]);
    GS_LOG(GS_LOG_DEBUG, "v=%s", big);
    n = drain(out, sizeof(out));
    cr_assert_lt(n, sizeof(big));
    cr_assert_eq(out[n - 1], '\n');
    cr_assert_eq(memcmp(out + n - 4, "...", 3), 0);
    cr_assert_eq(strchr(out, '\n'), out + n - 1);
}

Test(log, parses_level_names)
{
    enum gs_log_level level = GS_LOG_INFO;

    cr_assert_eq(gs_log_level_parse("debug", &level), 0);
    cr_assert_eq(level, GS_LOG_DEBUG);
    cr_assert_eq(gs_log_level_parse("WARNING", &level), 0);
    cr_assert_eq(level, GS_LOG_WARN);
    cr_assert_eq(gs_log_level_parse("error", &level), 0);
    cr_assert_eq(level, GS_LOG_ERROR);
    cr_assert_eq(gs_log_level_parse("loud", &level), -EINVAL);
    cr_assert_eq(level, GS_LOG_ERROR);
    cr_assert_str_eq(gs_log_level_name(GS_LOG_WARN), "warn");
}

Test(error, formats_place_prefix_like_compilers)
{
    struct gs_error err;
    char out[128];

    gs_error_clear(&err);
    cr_assert_eq(gs_error_set(&err, -EINVAL, 7, 12, "%s must be a positive integer",
                              "resources.gpus_per_node"),
                 -EINVAL);
    gs_error_format(&err, "job.toml", out, sizeof(out));
    cr_assert_str_eq(out, "job.toml:7:12: resources.gpus_per_node must be a positive integer");
    gs_error_set(&err, -ENOENT, 0, 0, "no such file");
    gs_error_format(&err, "job.toml", out, sizeof(out));
    cr_assert_str_eq(out, "job.toml: no such file");
    cr_assert_eq(gs_error_set(NULL, -EIO, 1, 1, "ignored"), -EIO);
    cr_assert_str_eq(gs_strerror(-ENOENT), "No such file or directory");
    cr_assert_str_eq(gs_strerror(-99999), "unknown error");
}
