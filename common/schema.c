/*
 * schema.c: checking user-written TOML against known keys (see schema.h). Suggestions use
 * the optimal string alignment distance (Levenshtein plus swapped neighbours), so
 * "gpu_per_node" finds "gpus_per_node" and "tiem_limit" finds "time_limit".
 */
#include "common/schema.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"

void gs_schema_init(struct gs_schema_ctx *c, struct gs_buf *errors, const char *filename,
                    const struct gs_schema_section *sections, size_t nsections, void *target)
{
    memset(c, 0, sizeof(*c));
    c->errors = errors;
    c->filename = filename != NULL ? filename : "<input>";
    c->sections = sections;
    c->nsections = nsections;
    c->target = target;
}

void gs_schema_report(struct gs_schema_ctx *c, int line, int col, const char *fmt, ...)
{
    va_list ap;

    c->nerrors++;
    if (c->nerrors > GS_SCHEMA_MAX_REPORTED)
        return;
    if (gs_buf_printf(c->errors, "%s:%d:%d: ", c->filename, line, col) < 0)
        c->enomem = true;
    va_start(ap, fmt);
    if (gs_buf_vprintf(c->errors, fmt, ap) < 0)
        c->enomem = true;
    va_end(ap);
    if (gs_buf_putc(c->errors, '\n') < 0)
        c->enomem = true;
}

int gs_schema_finish(struct gs_schema_ctx *c)
{
    if (c->nerrors > GS_SCHEMA_MAX_REPORTED &&
        gs_buf_printf(c->errors, "%s: %d more problems not shown\n", c->filename,
                      c->nerrors - GS_SCHEMA_MAX_REPORTED) < 0)
        c->enomem = true;
    if (c->enomem)
        return -ENOMEM;
    return c->nerrors > 0 ? -EINVAL : 0;
}

char *gs_schema_strdup(struct gs_schema_ctx *c, const char *s)
{
    char *d = strdup(s);

    if (d == NULL)
        c->enomem = true;
    return d;
}

static const char *type_of(const struct gs_toml_value *v)
{
    return gs_toml_type_name(gs_toml_type(v));
}

int gs_schema_string(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                     char **out)
{
    const char *s;
    size_t len;

    if (gs_toml_as_string(v, &s, &len) < 0) {
        GS_SCHEMA_REPORT_AT(c, v, "%s must be a string, not %s", path, type_of(v));
        return -EINVAL;
    }
    if (strlen(s) != len) {
        GS_SCHEMA_REPORT_AT(c, v, "%s must not contain a NUL character", path);
        return -EINVAL;
    }
    free(*out);
    *out = gs_schema_strdup(c, s);
    return 0;
}

int gs_schema_uint(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                   int64_t min, int64_t max, uint32_t *out)
{
    int64_t n = 0;
    bool is_int = gs_toml_as_int(v, &n) == 0;

    if (is_int && n >= min && n <= max) {
        *out = (uint32_t)n;
        return 0;
    }
    if (min == 1 && is_int && n < 1)
        GS_SCHEMA_REPORT_AT(c, v, "%s must be a positive integer", path);
    else
        GS_SCHEMA_REPORT_AT(c, v, "%s must be an integer from %lld to %lld", path, (long long)min,
                            (long long)max);
    return -EINVAL;
}

int gs_schema_double(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                     double min, double max, double *out)
{
    double x = 0;

    if (gs_toml_as_float(v, &x) == 0 && x >= min && x <= max) { /* NaN fails both */
        *out = x;
        return 0;
    }
    GS_SCHEMA_REPORT_AT(c, v, "%s must be a number from %g to %g", path, min, max);
    return -EINVAL;
}

int gs_schema_bool(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                   bool *out)
{
    if (gs_toml_as_bool(v, out) < 0) {
        GS_SCHEMA_REPORT_AT(c, v, "%s must be true or false, not %s", path, type_of(v));
        return -EINVAL;
    }
    return 0;
}

int gs_schema_duration(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                       uint64_t int_unit_s, bool allow_zero, uint64_t *out_s)
{
    uint64_t seconds;
    int64_t n;
    const char *s;

    if (gs_toml_as_int(v, &n) == 0 && n >= 0 && (uint64_t)n <= UINT64_MAX / int_unit_s &&
        (n > 0 || allow_zero)) {
        *out_s = (uint64_t)n * int_unit_s;
        return 0;
    }
    if (gs_toml_as_string(v, &s, NULL) == 0 && gs_parse_duration(s, &seconds) == 0 &&
        (seconds > 0 || allow_zero)) {
        *out_s = seconds;
        return 0;
    }
    GS_SCHEMA_REPORT_AT(c, v,
                        "%s must be a duration such as \"02:00:00\", \"2-12:00:00\", \"90m\" "
                        "or \"unlimited\" (an integer means %s)",
                        path, int_unit_s == 60 ? "minutes" : "seconds");
    return -EINVAL;
}

int gs_schema_size_mib(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                       uint64_t *out_mib)
{
    uint64_t bytes;
    int64_t mib;
    const char *s;

    if (gs_toml_as_int(v, &mib) == 0 && mib >= 0) {
        *out_mib = (uint64_t)mib;
        return 0;
    }
    if (gs_toml_as_string(v, &s, NULL) == 0 && gs_parse_size(s, GS_MIB, &bytes) == 0) {
        *out_mib = bytes / GS_MIB + (bytes % GS_MIB != 0);
        return 0;
    }
    GS_SCHEMA_REPORT_AT(c, v,
                        "%s must be a size such as \"64G\" or \"512MiB\" (or an integer "
                        "number of MiB)",
                        path);
    return -EINVAL;
}

int gs_schema_string_list(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                          const struct gs_toml_value ***ret_items, size_t *ret_n)
{
    bool is_array = gs_toml_type(v) == GS_TOML_ARRAY;
    size_t n = is_array ? gs_toml_count(v) : 1;
    const struct gs_toml_value **items;

    if (!is_array && gs_toml_type(v) != GS_TOML_STRING) {
        GS_SCHEMA_REPORT_AT(c, v, "%s must be an array of strings, not %s", path, type_of(v));
        return -EINVAL;
    }
    items = calloc(n > 0 ? n : 1, sizeof(*items));
    if (items == NULL) {
        c->enomem = true;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        items[i] = is_array ? gs_toml_at(v, i) : v;
        if (gs_toml_type(items[i]) != GS_TOML_STRING) {
            GS_SCHEMA_REPORT_AT(c, items[i], "%s[%zu] must be a string, not %s", path, i,
                                type_of(items[i]));
            free(items);
            return -EINVAL;
        }
    }
    *ret_items = items;
    *ret_n = n;
    return 0;
}

void gs_schema_strv_free(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

int gs_schema_strv(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                   char ***out, size_t *ret_n)
{
    const struct gs_toml_value **items = NULL;
    size_t n = 0;
    char **strv;
    int rc = gs_schema_string_list(c, v, path, &items, &n);

    if (rc < 0)
        return rc;
    strv = calloc(n + 1, sizeof(*strv));
    if (strv == NULL)
        c->enomem = true;
    for (size_t i = 0; strv != NULL && i < n; i++) {
        const char *s = NULL;

        gs_toml_as_string(items[i], &s, NULL);
        strv[i] = gs_schema_strdup(c, s);
    }
    free(items);
    if (strv == NULL)
        return -ENOMEM;
    gs_schema_strv_free(*out);
    *out = strv;
    *ret_n = n;
    return 0;
}

int gs_schema_edit_distance(const char *a, const char *b, int max)
{
    size_t la = strlen(a), lb = strlen(b);
    int d[32][32];

    if (max < 0)
        max = 0;
    if (max > 9)
        max = 9;
    /* Each length unit of difference costs an insertion: such a pair is past max already,
     * and an input full of unknown keys (fuzzed job files) would otherwise pay the table
     * for every key of every section. */
    if (la >= 32 || lb >= 32 || (la > lb ? la - lb : lb - la) > (size_t)max)
        return max + 1;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb] > max ? max + 1 : d[la][lb];
}

static void qualified(char *out, size_t size, const char *section, const char *key)
{
    snprintf(out, size, "%s%s%s", section, section[0] ? "." : "", key);
}

/* The closest key of this section, or the same name in another section. */
static void suggest(const struct gs_schema_ctx *c, const char *key, const char *section, char *out,
                    size_t size)
{
    int best = strlen(key) <= 4 ? 1 : 2;

    out[0] = '\0';
    for (size_t s = 0; s < c->nsections; s++) {
        const char *name = c->sections[s].name;
        bool here = strcmp(name, section) == 0;

        for (const struct gs_schema_key *k = c->sections[s].keys; k->key != NULL; k++) {
            /* Elsewhere only the same name counts. */
            int dist = here ? gs_schema_edit_distance(key, k->key, best)
                            : (strcmp(key, k->key) == 0 ? 0 : 1);

            if (!here && dist == 0) {
                qualified(out, size, name, k->key);
                return;
            }
            if (here && dist > 0 && dist <= best) {
                best = dist;
                qualified(out, size, name, k->key);
            }
        }
    }
}

static void report_unknown(struct gs_schema_ctx *c, const struct gs_toml_value *table, size_t i,
                           const char *section)
{
    const char *key = gs_toml_key_at(table, i, NULL);
    char hint[96], where[80] = "";

    suggest(c, key, section, hint, sizeof(hint));
    if (section[0] != '\0')
        snprintf(where, sizeof(where), " in %s", section);
    /* The same name at the top: say where it goes, not just its name again. */
    if (hint[0] != '\0' && section[0] != '\0' && strchr(hint, '.') == NULL)
        gs_schema_report(c, gs_toml_key_line(table, i), gs_toml_key_col(table, i),
                         "unknown key '%s'%s (did you mean the top-level '%s', before any "
                         "[table]?)",
                         key, where, hint);
    else if (hint[0] != '\0')
        gs_schema_report(c, gs_toml_key_line(table, i), gs_toml_key_col(table, i),
                         "unknown key '%s'%s (did you mean '%s'?)", key, where, hint);
    else
        gs_schema_report(c, gs_toml_key_line(table, i), gs_toml_key_col(table, i),
                         "unknown key '%s'%s", key, where);
}

static const struct gs_schema_key *find_key(const struct gs_schema_key *keys, const char *key,
                                            size_t len)
{
    for (; keys->key != NULL; keys++) {
        if (strlen(keys->key) == len && memcmp(keys->key, key, len) == 0)
            return keys;
    }
    return NULL;
}

void gs_schema_read_section(struct gs_schema_ctx *c, const struct gs_toml_value *table,
                            const char *name)
{
    const struct gs_schema_key *keys = NULL;

    for (size_t s = 0; s < c->nsections && keys == NULL; s++) {
        if (strcmp(c->sections[s].name, name) == 0)
            keys = c->sections[s].keys;
    }
    if (keys == NULL)
        return;
    if (gs_toml_type(table) != GS_TOML_TABLE) {
        GS_SCHEMA_REPORT_AT(c, table, "%s must be a table ([%s]), not %s", name, name,
                            type_of(table));
        return;
    }
    for (size_t i = 0; i < gs_toml_count(table); i++) {
        size_t klen;
        const char *key = gs_toml_key_at(table, i, &klen);
        const struct gs_schema_key *k = find_key(keys, key, klen);

        if (k == NULL)
            report_unknown(c, table, i, name);
        else {
            const struct gs_schema_key *outer = c->key; /* a section inside a section */
            const char *outer_section = c->section;

            c->key = k;
            c->section = name;
            k->read(c, gs_toml_at(table, i));
            c->key = outer;
            c->section = outer_section;
        }
    }
}

int gs_schema_parse(const char *text, size_t len, const char *filename,
                    const struct gs_schema_section *sections, size_t nsections, void *target,
                    struct gs_buf *errors)
{
    struct gs_toml_doc *doc = NULL;
    struct gs_schema_ctx c;
    struct gs_error err;
    int rc = gs_toml_parse(text, len, &doc, &err);

    if (rc == -EINVAL)
        gs_buf_printf(errors, "%s:%d:%d: %s\n", filename, err.line, err.col, err.msg);
    if (rc < 0)
        return rc;
    gs_schema_init(&c, errors, filename, sections, nsections, target);
    gs_schema_read_section(&c, gs_toml_root(doc), "");
    gs_toml_free(doc);
    return gs_schema_finish(&c);
}

int gs_schema_read_file(const char *path, struct gs_buf *text, struct gs_buf *errors)
{
    FILE *f = fopen(path, "rb");
    int rc;

    if (f == NULL) {
        rc = -errno;
        gs_buf_printf(errors, "%s: %s\n", path, strerror(errno));
        return rc;
    }
    rc = gs_buf_read_stream(text, f);
    if (rc == -EIO)
        gs_buf_printf(errors, "%s: read error\n", path);
    fclose(f);
    return rc;
}

int gs_schema_load(const char *path, const struct gs_schema_section *sections, size_t nsections,
                   void *target, struct gs_buf *errors)
{
    struct gs_buf text = GS_BUF_INIT;
    int rc = gs_schema_read_file(path, &text, errors);

    if (rc == 0)
        rc = gs_schema_parse(text.data != NULL ? text.data : "", text.len, path, sections,
                             nsections, target, errors);
    gs_buf_release(&text);
    return rc;
}
