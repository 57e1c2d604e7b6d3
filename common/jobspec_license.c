/*
 * jobspec_license.c: the licenses a job asks for (jobspec_license.h). Slurm's licenses are
 * counters the cluster has a fixed number of (a floating MATLAB or ANSYS seat, a share of
 * a database's connections): a job holds its counts from its start to its end and waits,
 * reason "Licenses", while they are not free (scheduler/license.c). The list is parsed
 * here for the CLI (sbatch -L) and checked here again for gschedd, which takes whatever a
 * client sends.
 */
#include "common/jobspec_license.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC(c) ((struct gs_jobspec *)(c)->target)

void gs_license_list_free(struct gs_job_license *l, size_t n)
{
    for (size_t i = 0; l != NULL && i < n; i++)
        free(l[i].name);
    free(l);
}

/* why set as by snprintf, -EINVAL returned. */
#define REFUSE(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

int gs_license_list_check(const struct gs_job_license *l, size_t n, char *why, size_t whylen)
{
    if (n > GS_JOBSPEC_LICENSES_MAX)
        return REFUSE("at most %d licenses", GS_JOBSPEC_LICENSES_MAX);
    for (size_t i = 0; i < n; i++) {
        if (l[i].name == NULL || !gs_jobspec_word_ok(l[i].name))
            return REFUSE("license name '%s' must be one word of letters, digits, '_', '.' or '-'",
                          l[i].name != NULL ? l[i].name : "");
        if (l[i].count < 1 || l[i].count > GS_LICENSE_COUNT_MAX)
            return REFUSE("license '%s': the count must be 1 to %u", l[i].name,
                          GS_LICENSE_COUNT_MAX);
        for (size_t k = 0; k < i; k++) {
            if (strcmp(l[k].name, l[i].name) == 0)
                return REFUSE("license '%s' is named twice", l[i].name);
        }
    }
    return 0;
}

/* One "NAME[:COUNT]" of len bytes into e (its name malloc'd). */
static int parse_one(const char *s, size_t len, struct gs_job_license *e, char *why, size_t whylen)
{
    const char *colon = memchr(s, ':', len);
    size_t nlen = colon != NULL ? (size_t)(colon - s) : len;
    unsigned long long count = 1;

    if (colon != NULL) {
        char digits[16];
        size_t dlen = len - nlen - 1;

        if (dlen == 0 || dlen >= sizeof(digits) || strspn(colon + 1, "0123456789") < dlen)
            return REFUSE("'%.*s': the count after ':' must be a number", (int)len, s);
        memcpy(digits, colon + 1, dlen);
        digits[dlen] = '\0';
        count = strtoull(digits, NULL, 10);
    }
    if (count < 1 || count > GS_LICENSE_COUNT_MAX)
        return REFUSE("'%.*s': the count must be 1 to %u", (int)len, s, GS_LICENSE_COUNT_MAX);
    e->name = strndup(s, nlen);
    if (e->name == NULL)
        return -ENOMEM;
    e->count = (uint32_t)count;
    return 0;
}

int gs_license_list_parse(const char *text, struct gs_job_license **ret, size_t *ret_n, char *why,
                          size_t whylen)
{
    struct gs_job_license *l = NULL;
    size_t n = 0;
    int rc = 0;

    if (strchr(text, '|') != NULL)
        return REFUSE("'%s': '|' (any one of several licenses) is not supported; list the ones "
                      "the job needs, all of them, with ','",
                      text);
    if (strchr(text, '@') != NULL)
        return REFUSE("'%s': '@' (a remote license server) is not supported", text);
    for (const char *p = text; rc == 0 && *p != '\0';) {
        size_t len = strcspn(p, ",");
        struct gs_job_license *grown;

        if (len == 0) {
            rc = REFUSE("'%s': an empty entry between commas", text);
            break;
        }
        if (n == GS_JOBSPEC_LICENSES_MAX) {
            rc = REFUSE("at most %d licenses", GS_JOBSPEC_LICENSES_MAX);
            break;
        }
        grown = realloc(l, (n + 1) * sizeof(*l));
        if (grown == NULL) {
            rc = -ENOMEM;
            break;
        }
        l = grown;
        rc = parse_one(p, len, &l[n], why, whylen);
        if (rc == 0)
            n++;
        p += len;
        if (*p == ',' && *++p == '\0')
            rc = REFUSE("'%s': an empty entry after the last comma", text);
    }
    if (rc == 0)
        rc = gs_license_list_check(l, n, why, whylen);
    if (rc < 0) {
        gs_license_list_free(l, n);
        return rc;
    }
    *ret = l;
    *ret_n = n;
    return 0;
}

void gs_license_list_format(const struct gs_job_license *l, size_t n, struct gs_buf *out)
{
    for (size_t i = 0; i < n; i++)
        gs_buf_printf(out, "%s%s:%u", i > 0 ? "," : "", l[i].name, l[i].count);
}

void gs_jobspec_read_licenses(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_jobspec *spec = SPEC(c);
    size_t n = gs_toml_count(v);
    struct gs_job_license *l;
    char why[160], path[64 + GS_JOBSPEC_NAME_MAX];

    if (gs_toml_type(v) != GS_TOML_TABLE || n == 0) {
        GS_SCHEMA_REPORT_AT(c, v,
                            "resources.licenses must be a table of license names and counts, "
                            "e.g. { matlab = 2 }");
        return;
    }
    if (n > GS_JOBSPEC_LICENSES_MAX) {
        GS_SCHEMA_REPORT_AT(c, v, "resources.licenses names at most %d licenses",
                            GS_JOBSPEC_LICENSES_MAX);
        return;
    }
    l = calloc(n, sizeof(*l));
    if (l == NULL) {
        c->enomem = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct gs_toml_value *count = gs_toml_at(v, i);
        size_t len;
        const char *key = gs_toml_key_at(v, i, &len);

        if ((l[i].name = strndup(key, len)) == NULL) {
            c->enomem = true;
            goto fail;
        }
        if (strlen(l[i].name) != len || !gs_jobspec_word_ok(l[i].name)) {
            gs_schema_report(c, gs_toml_key_line(v, i), gs_toml_key_col(v, i),
                             "resources.licenses: '%s' must be one word of letters, digits, "
                             "'_', '.' or '-'",
                             l[i].name);
            goto fail;
        }
        snprintf(path, sizeof(path), "resources.licenses.%s", l[i].name);
        if (gs_schema_uint(c, count, path, 1, GS_LICENSE_COUNT_MAX, &l[i].count) < 0)
            goto fail;
    }
    if (gs_license_list_check(l, n, why, sizeof(why)) < 0) { /* TOML refuses a key twice */
        GS_SCHEMA_REPORT_AT(c, v, "resources.licenses: %s", why);
        goto fail;
    }
    gs_license_list_free(spec->licenses, spec->nlicenses);
    spec->licenses = l;
    spec->nlicenses = n;
    return;
fail:
    gs_license_list_free(l, n);
}
