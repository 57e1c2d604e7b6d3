/*
 * fuzz_jobfile.c: libFuzzer harness for job files, along the path `gsched submit` takes:
 * gs_jobspec_parse_toml() reads the file (common/jobspec.h), the CLI sends the spec as a
 * gs.JobSpec (gs_proto_jobspec_view_init, proto/jobspec.h) and gschedd turns that back into
 * a spec with gs_proto_jobspec_from_pb(), which runs gs_jobspec_check().
 *
 * The input is the job file. A file the reader accepts must also pass gs_jobspec_check()
 * and survive the trip over the wire: otherwise `gsched check` would pass a job the
 * scheduler then refuses, and the harness aborts to say so. A refused file must come with
 * at least one "FILE:LINE:COL: message" line. Everything is freed on every path.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "proto/jobspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Sends spec over the wire as the CLI does and receives it as gschedd does. */
static void round_trip(const struct gs_jobspec *spec)
{
    struct gs_proto_jobspec_view view;
    struct gs_jobspec *received = NULL;
    struct gs_error err;

    gs_error_clear(&err);
    if (gs_jobspec_check(spec, &err) < 0)
        abort();
    if (gs_proto_jobspec_view_init(&view, spec) < 0)
        return;
    if (gs_proto_jobspec_from_pb(&view.spec, &received, &err) == -EINVAL)
        abort();
    gs_jobspec_free(received);
    gs_proto_jobspec_view_release(&view);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_buf errors = GS_BUF_INIT;
    struct gs_jobspec *spec = NULL;
    int rc;

    rc = gs_jobspec_parse_toml((const char *)data, size, "job.toml", &spec, &errors);
    if (rc == 0)
        round_trip(spec);
    else if (rc == -EINVAL && errors.len == 0)
        abort();
    gs_jobspec_free(spec);
    gs_buf_release(&errors);
    return 0;
}
