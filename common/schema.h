/*
 * schema.h: checking a TOML document against the keys a program knows, for the files users
 * write (job files, gsched.toml). A reader lists its sections and, per section, its keys
 * with a function that checks and stores each value. gs_schema_read_section() walks a table
 * in document order: known keys go to their function, unknown ones are reported with the
 * closest known key as a suggestion (also a key of the same name in another section). The
 * typed helpers check type and range and report "FILE:LINE:COL: PATH must be ...".
 *
 * Every problem is collected (up to GS_SCHEMA_MAX_REPORTED lines, then a count), so a user
 * sees all mistakes in one go. Caller-owned context; not thread-safe; no global state.
 */
#ifndef GS_SCHEMA_H
#define GS_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/toml.h"

#define GS_SCHEMA_MAX_REPORTED 20

struct gs_schema_ctx;

struct gs_schema_key {
    const char *key;
    void (*read)(struct gs_schema_ctx *c, const struct gs_toml_value *v);
};

struct gs_schema_section {
    const char *name;                 /* "" for the top level */
    const struct gs_schema_key *keys; /* ends with {NULL, NULL} */
};

struct gs_schema_ctx {
    struct gs_buf *errors;
    const char *filename;
    const struct gs_schema_section *sections;
    size_t nsections;
    void *target; /* what the key readers fill */
    /* While a reader runs: its key and section, for readers shared by several keys. */
    const struct gs_schema_key *key;
    const char *section;
    int nerrors;
    bool enomem;
};

void gs_schema_init(struct gs_schema_ctx *c, struct gs_buf *errors, const char *filename,
                    const struct gs_schema_section *sections, size_t nsections, void *target);

/*
 * A whole document in one call, for readers with nothing to do beyond their sections: parses
 * len bytes of TOML (a syntax error is one "FILENAME:LINE:COL: message" line in errors),
 * walks its root as section "" into target, and returns gs_schema_finish()'s result, or
 * -ENOMEM. gs_schema_load() reads the file at path first (an open or read error is one
 * "PATH: reason" line and its -errno).
 */
int gs_schema_parse(const char *text, size_t len, const char *filename,
                    const struct gs_schema_section *sections, size_t nsections, void *target,
                    struct gs_buf *errors);
/*
 * The whole file at path into text (the caller releases it), for a reader that parses it
 * itself; an open or read error is one "PATH: why" line in errors. 0 or a negative errno.
 */
int gs_schema_read_file(const char *path, struct gs_buf *text, struct gs_buf *errors);
int gs_schema_load(const char *path, const struct gs_schema_section *sections, size_t nsections,
                   void *target, struct gs_buf *errors);

/* Walks table as section name (which must be in the context's sections). */
void gs_schema_read_section(struct gs_schema_ctx *c, const struct gs_toml_value *table,
                            const char *name);

/*
 * Ends the check: appends the count of unreported problems, returns 0 when the document
 * had none, -EINVAL when it had some, -ENOMEM when memory ran out on the way.
 */
int gs_schema_finish(struct gs_schema_ctx *c);

void gs_schema_report(struct gs_schema_ctx *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define GS_SCHEMA_REPORT_AT(c, v, ...)                                                             \
    gs_schema_report((c), gs_toml_line(v), gs_toml_col(v), __VA_ARGS__)

/* strdup that records running out of memory in the context instead of returning it. */
char *gs_schema_strdup(struct gs_schema_ctx *c, const char *s);

/* Typed readers: each returns 0 with *out set, or -EINVAL after reporting the problem. */
int gs_schema_string(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                     char **out); /* replaces (frees) a previous *out */
int gs_schema_uint(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                   int64_t min, int64_t max, uint32_t *out);
/* A float (or an integer) in [min, max]; NaN never is. */
int gs_schema_double(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                     double min, double max, double *out);
int gs_schema_bool(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                   bool *out);
/*
 * A duration string (common/units.h forms) or an integer counted in int_unit_s seconds
 * (60 for job files, as Slurm counts minutes). Zero is refused unless allow_zero.
 */
int gs_schema_duration(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                       uint64_t int_unit_s, bool allow_zero, uint64_t *out_s);
/* A size string ("64G") or an integer number of MiB; result in MiB, rounded up. */
int gs_schema_size_mib(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                       uint64_t *out_mib);
/*
 * An array of strings (or one string, as a list of one). *ret_items (free() it) borrows the
 * string values from the document.
 */
int gs_schema_string_list(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                          const struct gs_toml_value ***ret_items, size_t *ret_n);
/* Copies a string list into a NULL-terminated array of strings (free with gs_schema_strv_free). */
int gs_schema_strv(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                   char ***out, size_t *ret_n);
void gs_schema_strv_free(char **v);

/* Optimal string alignment distance of a and b when it is at most max (0 to 9), else
 * max + 1: only small distances make "did you mean" suggestions (also those of the sbatch
 * option parser), and a pair whose lengths differ by more than max costs nothing. */
int gs_schema_edit_distance(const char *a, const char *b, int max);

#endif
