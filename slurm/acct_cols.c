/*
 * acct_cols.c: the columns sacct and sstat share (see acct_cols.h).
 */
#include "slurm/acct_cols.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "slurm/slurm_fmt.h"

/* "NAME" or "NAME%WIDTH" [p, p + len) as column field/width; 0, or 1 after saying why. */
static int parse_one(const struct slurm_cols *c, const char *cmd, const char *p, size_t len,
                     int *ret_field, int *ret_width)
{
    char word[64], *pct, *end;
    int f = -1;

    snprintf(word, sizeof(word), "%.*s", (int)len, p);
    if ((pct = strchr(word, '%')) != NULL)
        *pct = '\0';
    for (int i = 0; i < c->ndefs; i++) {
        if (strcasecmp(word, c->defs[i].name) == 0)
            f = i;
    }
    if (f < 0 || len >= sizeof(word))
        return slurm_error(cmd, "Invalid field requested: \"%s\"", word);
    *ret_field = f;
    *ret_width = c->defs[f].width;
    if (pct != NULL) {
        long w = strtol(pct + 1, &end, 10);

        if (pct[1] == '\0' || *end != '\0' || w == 0 || w > 1000 || w < -1000)
            return slurm_error(cmd, "Invalid field width in \"%.*s\"", (int)len, p);
        *ret_width = (int)w;
    }
    return 0;
}

int slurm_cols_parse(struct slurm_cols *c, const char *cmd, const char *list)
{
    c->n = 0;
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ",");
        int field = 0, width = 0;

        if (parse_one(c, cmd, p, len, &field, &width) != 0)
            return 1;
        if (c->n == SLURM_COLS_MAX)
            return slurm_error(cmd, "at most %d fields", SLURM_COLS_MAX);
        c->col[c->n].field = field;
        c->col[c->n].width = width;
        c->n++;
        p += len + (p[len] == ',');
    }
    return c->n > 0 ? 0 : slurm_error(cmd, "no fields in --format");
}

int slurm_cols_put(const struct slurm_cols *c, size_t i, const char *text, struct gs_buf *out)
{
    switch (c->parsable) {
    case SLURM_PARSABLE_TRAILING:
        return gs_buf_printf(out, "%s|", text);
    case SLURM_PARSABLE_BETWEEN:
        return gs_buf_printf(out, "%s%s", text, i + 1 == c->n ? "" : "|");
    default:
        return slurm_sacct_cell(out, text, c->col[i].width);
    }
}

int slurm_cols_header(const struct slurm_cols *c, struct gs_buf *out)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < c->n; i++)
        rc = slurm_cols_put(c, i, c->defs[c->col[i].field].name, out);
    if (rc == 0)
        rc = gs_buf_putc(out, '\n');
    if (c->parsable != SLURM_PARSABLE_NO)
        return rc;
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        int w = c->col[i].width < 0 ? -c->col[i].width : c->col[i].width;

        for (int k = 0; rc == 0 && k < w; k++)
            rc = gs_buf_putc(out, '-');
        if (rc == 0)
            rc = gs_buf_putc(out, ' ');
    }
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}
