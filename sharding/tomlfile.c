/*
 * tomlfile.c: the manifest's and the plan file's shared reading and writing helpers
 * (tomlfile.h): one place for how sharding's TOML files report errors and are written.
 */
#include "sharding/tomlfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/path.h"

int shard_toml_bad_at(struct shard_toml_reader *r, const struct gs_toml_value *v, const char *fmt,
                      ...)
{
    char msg[GS_ERROR_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gs_error_set(r->err, -EINVAL, 0, 0, "%s:%d:%d: %s", r->path, gs_toml_line(v),
                        gs_toml_col(v), msg);
}

int shard_toml_check_keys(struct shard_toml_reader *r, const struct gs_toml_value *t,
                          const char *const *keys)
{
    for (size_t i = 0; i < gs_toml_count(t); i++) {
        const char *k = gs_toml_key_at(t, i, NULL);
        size_t j = 0;

        while (keys[j] != NULL && strcmp(keys[j], k) != 0)
            j++;
        if (keys[j] == NULL)
            return gs_error_set(r->err, -EINVAL, 0, 0, "%s:%d:%d: unknown key '%s'", r->path,
                                gs_toml_key_line(t, i), gs_toml_key_col(t, i), k);
    }
    return 0;
}

int shard_toml_quote(struct gs_buf *out, const char *s)
{
    int rc = gs_buf_putc(out, '"');

    for (; rc == 0 && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            rc = gs_buf_printf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            rc = gs_buf_printf(out, "\\u%04X", c);
        else
            rc = gs_buf_putc(out, (char)c);
    }
    return rc == 0 ? gs_buf_putc(out, '"') : rc;
}

int shard_toml_write(const char *path, const struct gs_buf *text, struct gs_error *err)
{
    int rc = gs_path_replace(path, text->data != NULL ? text->data : "", text->len, 0644);

    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "%s: cannot write: %s", path, gs_strerror(rc));
    return rc;
}
