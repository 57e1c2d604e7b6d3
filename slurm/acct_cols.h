/*
 * acct_cols.h: the columns of sacct and sstat, which Slurm prints alike: --format NAMES
 * with an optional %WIDTH each (negative: left-justified), cells padded to their width and
 * cut with '+', a row of dashes under the names, or with -p '|' after every field and with
 * -P '|' between them. Each command keeps its own field names and how it fills a cell.
 * Pure but for the errors printed "CMD: error: ..."; no allocation.
 */
#ifndef GS_SLURM_ACCT_COLS_H
#define GS_SLURM_ACCT_COLS_H

#include <stddef.h>

#include "common/buf.h"

#define SLURM_COLS_MAX 64

/* One field a command knows: its name (matched in any case) and default width. */
struct slurm_col_def {
    const char *name;
    int width; /* < 0: left-justified */
};

enum slurm_parsable { SLURM_PARSABLE_NO, SLURM_PARSABLE_TRAILING, SLURM_PARSABLE_BETWEEN };

struct slurm_cols {
    const struct slurm_col_def *defs; /* the command's fields, ndefs of them */
    int ndefs;
    struct {
        int field; /* index into defs */
        int width;
    } col[SLURM_COLS_MAX];
    size_t n;
    enum slurm_parsable parsable;
};

/* Replaces c's columns with those of list ("JobID,MaxRSS%12"). Returns 0, or prints
 * "cmd: error: ..." (an unknown field, a bad width, too many, none) and returns 1. */
int slurm_cols_parse(struct slurm_cols *c, const char *cmd, const char *list);
/* Appends column i's text, padded or delimited as c prints. 0 or -ENOMEM. */
int slurm_cols_put(const struct slurm_cols *c, size_t i, const char *text, struct gs_buf *out);
/* Appends the names line and, unless parsable, the dashes line. 0 or -ENOMEM. */
int slurm_cols_header(const struct slurm_cols *c, struct gs_buf *out);

#endif
