/*
 * jobspec_mail.c: a job's mail types and address (see jobspec_mail.h): parsed here for
 * sbatch and job files alike, checked again by gschedd, which passes the address to a
 * program as an argument.
 */
#include "common/jobspec_mail.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/jobspec.h"
#include "common/toml.h"

static const struct {
    const char *name;
    uint32_t bits;
} names[] = {
    {"NONE", 0},
    {"BEGIN", GS_MAIL_BEGIN},
    {"END", GS_MAIL_END},
    {"FAIL", GS_MAIL_FAIL},
    {"REQUEUE", GS_MAIL_REQUEUE},
    {"ALL", GS_MAIL_ALL},
    {"INVALID_DEPEND", GS_MAIL_INVALID_DEPEND},
    {"STAGE_OUT", GS_MAIL_STAGE_OUT},
    {"TIME_LIMIT", GS_MAIL_TIME_LIMIT},
    {"TIME_LIMIT_90", GS_MAIL_TIME_LIMIT_90},
    {"TIME_LIMIT_80", GS_MAIL_TIME_LIMIT_80},
    {"TIME_LIMIT_50", GS_MAIL_TIME_LIMIT_50},
    {"ARRAY_TASKS", GS_MAIL_ARRAY_TASKS},
};

#define NNAMES (sizeof(names) / sizeof(names[0]))

int gs_mail_types_parse(const char *text, uint32_t *ret, char *why, size_t whylen)
{
    uint32_t bits = 0;
    const char *p = text;

    for (;;) {
        size_t len = strcspn(p, ",");
        size_t k;

        for (k = 0; k < NNAMES; k++) {
            if (len == strlen(names[k].name) && strncasecmp(p, names[k].name, len) == 0)
                break;
        }
        if (k == NNAMES) {
            snprintf(why, whylen,
                     "'%.*s' is not a mail type (NONE, BEGIN, END, FAIL, REQUEUE, ALL, "
                     "TIME_LIMIT, TIME_LIMIT_90, TIME_LIMIT_80, TIME_LIMIT_50, ARRAY_TASKS, "
                     "INVALID_DEPEND, STAGE_OUT)",
                     (int)(len < 40 ? len : 40), p);
            return -EINVAL;
        }
        bits |= names[k].bits;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *ret = bits;
    return 0;
}

void gs_mail_types_format(uint32_t types, struct gs_buf *out)
{
    bool any = false;

    /* NONE and ALL are sets, not types: only the single names are written. */
    for (size_t k = 0; k < NNAMES; k++) {
        if (names[k].bits == 0 || names[k].bits == GS_MAIL_ALL || (types & names[k].bits) == 0)
            continue;
        gs_buf_printf(out, "%s%s", any ? "," : "", names[k].name);
        any = true;
    }
    if (!any)
        gs_buf_append_str(out, "NONE");
}

int gs_mail_user_check(const char *user, char *why, size_t whylen)
{
    size_t len = strlen(user);

    if (len == 0 || len > GS_MAIL_USER_MAX) {
        snprintf(why, whylen, "a mail address is 1 to %d characters", GS_MAIL_USER_MAX);
        return -EINVAL;
    }
    if (user[0] == '-') {
        snprintf(why, whylen, "a mail address does not start with '-'");
        return -EINVAL;
    }
    for (size_t i = 0; i < len; i++) {
        char ch = user[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              strchr("._%+-@", ch) != NULL)) {
            snprintf(why, whylen, "'%c' in a mail address (letters, digits and . _ %% + - @ only)",
                     ch);
            return -EINVAL;
        }
    }
    return 0;
}

#define SPEC(c) ((struct gs_jobspec *)(c)->target)

static void rd_type(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    const struct gs_toml_value **items = NULL;
    uint32_t bits = 0;
    size_t n = 0;
    char why[200];

    if (gs_schema_string_list(c, v, "mail.type", &items, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        const char *text = "";
        uint32_t one;

        gs_toml_as_string(items[i], &text, NULL);
        if (gs_mail_types_parse(text, &one, why, sizeof(why)) < 0) {
            GS_SCHEMA_REPORT_AT(c, items[i], "mail.type: %s", why);
            break;
        }
        bits |= one;
    }
    SPEC(c)->mail_types = bits;
    free(items);
}

static void rd_user(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char why[120];

    if (gs_schema_string(c, v, "mail.user", &SPEC(c)->mail_user) < 0 || SPEC(c)->mail_user == NULL)
        return;
    if (gs_mail_user_check(SPEC(c)->mail_user, why, sizeof(why)) < 0)
        GS_SCHEMA_REPORT_AT(c, v, "mail.user: %s", why);
}

const struct gs_schema_key gs_jobspec_mail_keys[] = {
    {"type", rd_type},
    {"user", rd_user},
    {NULL, NULL},
};
