/*
 * table.c: aligned text tables for listings such as `gsched queue` (see table.h). The
 * cells are kept until rendering because a column's width is known only after its last row.
 */
#include "cli/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cli_table_init(struct cli_table *t, size_t ncols)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols > 0 ? ncols : 1;
}

void cli_table_release(struct cli_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->ncells; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->ncells = t->cap = 0;
}

int cli_table_add(struct cli_table *t, const char *cell)
{
    char *copy;

    if (t->ncells == t->cap) {
        size_t cap = t->cap > 0 ? t->cap * 2 : 64;
        char **cells = realloc(t->cells, cap * sizeof(*cells));

        if (cells == NULL)
            return -ENOMEM;
        t->cells = cells;
        t->cap = cap;
    }
    copy = strdup(cell != NULL ? cell : "");
    if (copy == NULL)
        return -ENOMEM;
    t->cells[t->ncells++] = copy;
    return 0;
}

static const char *cell_at(const struct cli_table *t, size_t row, size_t col)
{
    size_t i = row * t->ncols + col;

    return i < t->ncells ? t->cells[i] : "";
}

static int render_row(const struct cli_table *t, size_t row, const size_t *width,
                      struct gs_buf *out)
{
    size_t start = out->len, len;
    int rc = 0;

    for (size_t c = 0; rc == 0 && c < t->ncols; c++) {
        const char *cell = cell_at(t, row, c);

        if (c + 1 == t->ncols)
            rc = gs_buf_append_str(out, cell);
        else
            rc = gs_buf_printf(out, "%-*s  ", (int)width[c], cell);
    }
    /* Empty cells at the end of a row would leave padding behind. */
    for (len = out->len; rc == 0 && len > start && out->data[len - 1] == ' '; len--)
        ;
    gs_buf_truncate(out, len);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

int cli_table_render(const struct cli_table *t, struct gs_buf *out)
{
    size_t nrows = (t->ncells + t->ncols - 1) / t->ncols;
    size_t *width = calloc(t->ncols, sizeof(*width));
    int rc = 0;

    if (width == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < t->ncells; i++) {
        size_t len = strlen(t->cells[i]);

        if (len > width[i % t->ncols])
            width[i % t->ncols] = len;
    }
    for (size_t r = 0; rc == 0 && r < nrows; r++)
        rc = render_row(t, r, width, out);
    free(width);
    return rc;
}
