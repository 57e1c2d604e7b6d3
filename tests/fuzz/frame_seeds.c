/*
 * frame_seeds.c: writes the frame harness's seed corpus (corpus/frame/) from real envelopes,
 * so the seeds follow gsched.proto instead of being hand-made bytes. Run by hand when the
 * protocol changes: fuzz_frame_seeds DIR, then commit what changed.
 *
 * Each seed is what fuzz_frame.c reads: one byte choosing the chunk size, then a stream of
 * whole frames as gs_proto_encode() writes them. The seeds: a Hello, a SubmitRequest whose
 * JobSpec comes from a small job file (read by gs_jobspec_parse_toml, sent through
 * gs_proto_jobspec_view_init as the CLI sends it), a QueueRequest, and a Hello followed by
 * the SubmitRequest in small chunks, as a CLI's connection starts.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "proto/frame.h"
#include "proto/jobspec.h"

static const char job_file[] = "name = \"seed\"\n"
                               "[resources]\nnodes = 2\ngpus_per_node = 4\ntime_limit = \"1h\"\n"
                               "[run]\ncommand = [\"python\", \"train.py\"]\n"
                               "env = { OMP_NUM_THREADS = \"4\" }\n";

/* Writes chunk selector byte, then the frames in stream, to DIR/name. Returns 0 or -errno. */
static int write_seed(const char *dir, const char *name, unsigned char chunk,
                      const struct gs_buf *stream)
{
    char path[4096];
    FILE *f;
    int rc = 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL)
        return -errno;
    if (fputc(chunk, f) == EOF || fwrite(stream->data, 1, stream->len, f) != stream->len)
        rc = -EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -EIO;
    return rc;
}

static int encode_hello(struct gs_buf *out)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Hello hello = GS__HELLO__INIT;

    gs_proto_hello_init(&hello, GS__ROLE__ROLE_CLI, "seed");
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    return gs_proto_encode(&env, out);
}

static int encode_submit(const struct gs_jobspec *spec, struct gs_buf *out)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__SubmitRequest req = GS__SUBMIT_REQUEST__INIT;
    struct gs_proto_jobspec_view view;
    int rc = gs_proto_jobspec_view_init(&view, spec);

    if (rc < 0)
        return rc;
    req.spec = &view.spec;
    req.source_file = "/home/alice/seed.toml";
    env.request_id = 1;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REQUEST;
    env.submit_request = &req;
    rc = gs_proto_encode(&env, out);
    gs_proto_jobspec_view_release(&view);
    return rc;
}

static int encode_queue(struct gs_buf *out)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__QueueRequest req = GS__QUEUE_REQUEST__INIT;

    req.include_finished = 1;
    req.limit = 10;
    env.request_id = 2;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REQUEST;
    env.queue_request = &req;
    return gs_proto_encode(&env, out);
}

static int write_seeds(const char *dir, const struct gs_jobspec *spec)
{
    struct gs_buf hello = GS_BUF_INIT, submit = GS_BUF_INIT, queue = GS_BUF_INIT;
    struct gs_buf both = GS_BUF_INIT;
    int rc = encode_hello(&hello);

    if (rc == 0)
        rc = encode_submit(spec, &submit);
    if (rc == 0)
        rc = encode_queue(&queue);
    if (rc == 0)
        rc = gs_buf_append(&both, hello.data, hello.len);
    if (rc == 0)
        rc = gs_buf_append(&both, submit.data, submit.len);
    if (rc == 0)
        rc = write_seed(dir, "hello.bin", 255, &hello);
    if (rc == 0)
        rc = write_seed(dir, "submit.bin", 255, &submit);
    if (rc == 0)
        rc = write_seed(dir, "queue.bin", 255, &queue);
    if (rc == 0)
        rc = write_seed(dir, "hello-submit-chunked.bin", 6, &both);
    gs_buf_release(&hello);
    gs_buf_release(&submit);
    gs_buf_release(&queue);
    gs_buf_release(&both);
    return rc;
}

int main(int argc, char **argv)
{
    struct gs_buf errors = GS_BUF_INIT;
    struct gs_jobspec *spec = NULL;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_frame_seeds DIR\n");
        return 2;
    }
    rc = gs_jobspec_parse_toml(job_file, strlen(job_file), "seed.toml", &spec, &errors);
    if (rc == 0)
        rc = write_seeds(argv[1], spec);
    if (rc < 0)
        fprintf(stderr, "fuzz_frame_seeds: %s%s\n", errors.data != NULL ? errors.data : "",
                strerror(-rc));
    gs_jobspec_free(spec);
    gs_buf_release(&errors);
    return rc < 0 ? 1 : 0;
}
