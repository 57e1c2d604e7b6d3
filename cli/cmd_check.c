/*
 * cmd_check.c: `gsched check JOB.toml [--json]`: reads a job file exactly as `gsched submit`
 * will, and prints either every problem (FILE:LINE:COL: message, exit 1) or the job as
 * gsched understood it, defaults filled in (exit 0). Nothing is sent anywhere.
 */
#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/jobspec_print.h"
#include "common/error.h"
#include "common/jobspec.h"
#include "common/json.h"

/* Reads path ("-": standard input) into out; on failure prints why and returns < 0. */
int cli_read_file(const char *path, struct gs_buf *out)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    int rc;

    if (f == NULL) {
        rc = -errno;
        fprintf(stderr, "gsched: %s: %s\n", path, gs_strerror(rc));
        return rc;
    }
    rc = gs_buf_read_stream(out, f);
    if (f != stdin)
        fclose(f);
    if (rc < 0)
        fprintf(stderr, "gsched: %s: %s\n", path, gs_strerror(rc));
    return rc;
}

static int print_spec(const struct gs_jobspec *spec, bool json)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc;

    if (json) {
        gs_json_init(&j, &out);
        cli_jobspec_json(&j, spec);
        rc = gs_json_finish(&j);
        if (rc == 0)
            rc = gs_buf_putc(&out, '\n');
    } else {
        rc = cli_jobspec_text(&out, spec);
    }
    if (rc == 0 && out.len > 0 && fwrite(out.data, 1, out.len, stdout) != out.len)
        rc = -EIO;
    gs_buf_release(&out);
    return rc;
}

int cli_cmd_check(int argc, char **argv)
{
    struct gs_buf text = GS_BUF_INIT, errors = GS_BUF_INIT;
    struct gs_jobspec *spec = NULL;
    const char *path = NULL;
    bool json = false;
    int rc;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage_error("check", "unknown option '%s'", argv[i]);
        else if (path != NULL)
            return cli_usage_error("check", "one job file at a time ('%s')", argv[i]);
        else
            path = argv[i];
    }
    if (path == NULL)
        return cli_usage_error("check", "which job file? (gsched check JOB.toml)");
    rc = cli_read_file(path, &text);
    if (rc == 0)
        rc = gs_jobspec_parse_toml(text.data != NULL ? text.data : "", text.len,
                                   strcmp(path, "-") == 0 ? "<stdin>" : path, &spec, &errors);
    if (rc < 0 && errors.len > 0)
        fputs(errors.data, stderr);
    if (rc == 0)
        rc = print_spec(spec, json);
    gs_jobspec_free(spec);
    gs_buf_release(&text);
    gs_buf_release(&errors);
    return rc == 0 ? 0 : 1;
}
