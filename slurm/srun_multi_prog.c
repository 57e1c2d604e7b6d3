/*
 * srun_multi_prog.c: srun --multi-prog FILE, Slurm's MPMD configuration: each line names
 * task ranks ("0", "1-3,7", or "*" for the rest) and the program each of them runs (words
 * split as a #SBATCH line's: gs_sbatch_split_words), with
 * %t standing for the task's rank and %o for its offset among the line's ranks. srun reads
 * the file here, where the user typed the command, and turns it into one small /bin/sh
 * program that every task runs: tests on SLURM_PROCID, one a line, that exec the task's own
 * line (its size grows with the lines and ranges, not with the ranks they name), so
 * the step needs nothing new of gschedd or the workers. A rank no line names fails at its
 * start, saying so, as Slurm's does.
 */
#include "slurm/srun.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/path.h"
#include "slurm/sbatch.h"

#define MULTI_PROG_MAX_RANK 65535 /* ranks a line may name: 0..this */

struct mp_ctx {
    const char *path;
    int line;
    char *why;
    size_t why_size;
    unsigned char *seen; /* per rank: the line that named it, 0 none (capped at 255) */
};

__attribute__((format(printf, 2, 3))) static int bad(struct mp_ctx *c, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(c->why, c->why_size, "%s:%d: %s", c->path, c->line, msg);
    return -EINVAL;
}

/* Appends word as one shell word: %t and %o as the task's rank and its offset (variables
 * the script sets), the rest quoted. */
static void put_word(struct gs_buf *out, const char *word)
{
    const char *seg = word;

    gs_buf_putc(out, ' ');
    if (*word == '\0')
        gs_buf_append_str(out, "''");
    for (const char *p = word; *word != '\0'; p++) {
        bool var = p[0] == '%' && (p[1] == 't' || p[1] == 'o');

        if (*p != '\0' && !var)
            continue;
        if (p > seg) {
            char *part = strndup(seg, (size_t)(p - seg));

            if (part == NULL)
                gs_buf_fail(out, -ENOMEM);
            else
                gs_buf_argv_join(out, &part, 1);
            free(part);
        }
        if (*p == '\0')
            break;
        gs_buf_append_str(out, p[1] == 't' ? "\"$r\"" : "\"$o\"");
        seg = ++p + 1;
    }
}

/*
 * "0,2-3" into a test that holds for those ranks and sets o, each range's offset counted on
 * from the last: { [ "$r" -ge 0 ] && [ "$r" -le 0 ] && o=$((r - 0 + 0)); } || ...; "*" into
 * true with o=$r (the line for the ranks no other line names: *star).
 */
static int put_ranks(struct mp_ctx *c, const char *spec, size_t len, struct gs_buf *out, bool *star)
{
    const char *p = spec, *end = spec + len;
    unsigned long offset = 0;

    *star = len == 1 && *spec == '*';
    if (*star) {
        gs_buf_append_str(out, "o=$r;");
        return 0;
    }
    while (p < end) {
        char *stop;
        unsigned long lo = strtoul(p, &stop, 10), hi = lo;

        if (stop == p || *p == '-' || *p == '+')
            return bad(c, "'%.*s' is not a list of task ranks (0,2-3) or *", (int)len, spec);
        if (stop < end && *stop == '-') {
            p = stop + 1;
            hi = strtoul(p, &stop, 10);
            if (stop == p || *p == '-' || *p == '+' || hi < lo)
                return bad(c, "'%.*s' is not a list of task ranks (0,2-3) or *", (int)len, spec);
        }
        if (hi > MULTI_PROG_MAX_RANK)
            return bad(c, "task ranks go up to 65535, not in '%.*s'", (int)len, spec);
        if (stop < end && *stop != ',')
            return bad(c, "'%.*s' is not a list of task ranks (0,2-3) or *", (int)len, spec);
        for (unsigned long r = lo; r <= hi; r++) {
            if (c->seen[r] != 0)
                return bad(c, "task %lu is on an earlier line too", r);
            c->seen[r] = 1;
        }
        gs_buf_printf(out,
                      "%s{ [ \"$r\" -ge %lu ] && [ \"$r\" -le %lu ] && o=$((r - %lu + %lu)); }",
                      offset > 0 ? " || " : "", lo, hi, lo, offset);
        offset += hi - lo + 1;
        p = stop < end ? stop + 1 : end;
    }
    return 0;
}

int cli_srun_multi_prog(const char *path, struct gs_buf *script, char *why, size_t why_size)
{
    struct gs_buf text = GS_BUF_INIT, rest = GS_BUF_INIT;
    struct mp_ctx c = {.path = path, .why = why, .why_size = why_size};
    int rc = gs_path_read_all(path, &text);

    if (rc < 0) {
        snprintf(why, why_size, "%s: %s", path, strerror(-rc));
        return rc;
    }
    c.seen = calloc(MULTI_PROG_MAX_RANK + 1, 1);
    if (c.seen == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    gs_buf_append_str(script, "r=$SLURM_PROCID\n");
    for (const char *p = text.data != NULL ? text.data : ""; rc == 0 && *p != '\0';) {
        size_t len = strcspn(p, "\n"), rlen;
        const char *line = p, *end = p + len;
        struct gs_buf test = GS_BUF_INIT;
        struct gs_error err;
        char **w = NULL;
        int wrc;
        size_t nw = 0;
        bool star = false;

        c.line++;
        p += len + (p[len] == '\n');
        while (line < end && (*line == ' ' || *line == '\t'))
            line++;
        if (line == end || *line == '#')
            continue;
        rlen = strcspn(line, " \t");
        if (line + rlen >= end) {
            rc = bad(&c, "a line is RANKS PROGRAM [ARGS...]");
            break;
        }
        rc = put_ranks(&c, line, rlen, &test, &star);
        if (rc == 0 && star && rest.len > 0)
            rc = bad(&c, "a second * line");
        gs_error_clear(&err);
        if (rc == 0 && (wrc = gs_sbatch_split_words(line + rlen, end, &w, &nw, &err)) < 0)
            rc = wrc == -ENOMEM ? -ENOMEM : bad(&c, "%s", err.msg);
        if (rc == 0 && nw == 0)
            rc = bad(&c, "a line is RANKS PROGRAM [ARGS...]");
        if (rc == 0) {
            struct gs_buf *to = star ? &rest : script;

            gs_buf_printf(to, star ? "%s exec" : "if %s; then exec", test.data);
            for (size_t i = 0; i < nw; i++)
                put_word(to, w[i]);
            gs_buf_append_str(to, star ? "\n" : "; fi\n");
        }
        gs_sbatch_words_free(w);
        gs_buf_release(&test);
    }
    /* The * line last: it takes every rank the others did not. */
    if (rc == 0 && rest.len == 0)
        gs_buf_append_str(&rest, "echo \"srun: error: task $r: no line of the --multi-prog "
                                 "file names it\" >&2\nexit 1\n");
    gs_buf_append(script, rest.data, rest.len);
    if (rc == 0)
        rc = gs_buf_error(script);
out:
    free(c.seen);
    gs_buf_release(&text);
    gs_buf_release(&rest);
    return rc;
}
