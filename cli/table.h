/*
 * table.h: the CLI's aligned text tables: cells are added row by row, then every column is
 * padded to its widest cell (the last column is not padded, so lines carry no trailing
 * blanks), with two spaces between columns. Widths count bytes, which is exact for the
 * ASCII that ids, states and node names are. Caller-owned storage; not thread-safe.
 */
#ifndef GS_CLI_TABLE_H
#define GS_CLI_TABLE_H

#include <stddef.h>

#include "common/buf.h"

struct cli_table {
    size_t ncols;
    char **cells; /* row-major, owned */
    size_t ncells;
    size_t cap;
};

void cli_table_init(struct cli_table *t, size_t ncols);
/* Frees the cells; the table may be initialised again. NULL allowed. */
void cli_table_release(struct cli_table *t);
/* Adds the next cell (copied), filling rows left to right. Returns 0 or -ENOMEM. */
int cli_table_add(struct cli_table *t, const char *cell);
/* Appends the table, one line per row, to out. A short last row is padded with "". */
int cli_table_render(const struct cli_table *t, struct gs_buf *out);

#endif
