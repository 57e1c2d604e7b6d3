/*
 * fuzz_frame.c: libFuzzer harness for the wire format (proto/frame.h), the first code that
 * touches what a peer sends to gschedd or gsched-workerd.
 *
 * The input is a byte stream. Its first byte sets the chunk size (1..256) the rest is fed
 * to the incremental decoder in, as a socket would deliver it; frames are limited to
 * MAX_FRAME bytes so one input cannot ask for the default 16 MiB. Each decoded envelope gets
 * what its receiver does first: a Hello is checked; a SubmitRequest's JobSpec becomes a
 * struct gs_jobspec through gs_proto_jobspec_from_pb() (proto/jobspec.h), which runs
 * gs_jobspec_check(), as gschedd does on submit. Then the envelope is encoded again and the
 * result decoded, which must succeed: whatever was accepted can be forwarded.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "proto/frame.h"
#include "proto/jobspec.h"

#define MAX_FRAME (64u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Encodes env again and decodes the payload: an accepted envelope must survive the trip. */
static void reencode(const Gs__Envelope *env)
{
    struct gs_buf out = GS_BUF_INIT;
    Gs__Envelope *again = NULL;
    int rc = gs_proto_encode(env, &out);

    if (rc == 0)
        rc = gs_proto_decode(out.data + GS_PROTO_HEADER_SIZE, out.len - GS_PROTO_HEADER_SIZE,
                             &again);
    if (rc < 0 && rc != -ENOMEM && rc != -EMSGSIZE)
        abort();
    gs_proto_envelope_free(again);
    gs_buf_release(&out);
}

/* What the receiver of env does with it before anything else. */
static void receive(const Gs__Envelope *env)
{
    struct gs_jobspec *spec = NULL;
    struct gs_error err;

    gs_error_clear(&err);
    if (env->body_case == GS__ENVELOPE__BODY_HELLO)
        (void)gs_proto_hello_check(env->hello, 0);
    if (env->body_case == GS__ENVELOPE__BODY_SUBMIT_REQUEST && env->submit_request->spec != NULL)
        (void)gs_proto_jobspec_from_pb(env->submit_request->spec, &spec, &err);
    gs_jobspec_free(spec);
    reencode(env);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_proto_decoder dec;
    Gs__Envelope *env = NULL;
    size_t chunk;

    if (size == 0)
        return 0;
    chunk = (size_t)data[0] + 1;
    data++;
    size--;
    gs_proto_decoder_init(&dec, MAX_FRAME);
    while (size > 0) {
        size_t len = size < chunk ? size : chunk;
        const uint8_t *p = data;
        int rc;

        data += len;
        size -= len;
        while ((rc = gs_proto_decoder_next(&dec, &p, &len, &env)) == 1) {
            receive(env);
            gs_proto_envelope_free(env);
        }
        if (rc < 0)
            break;
    }
    (void)gs_proto_decoder_finish(&dec);
    gs_proto_decoder_release(&dec);
    return 0;
}
