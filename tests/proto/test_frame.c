/*
 * test_frame.c: the wire format without an event loop. Every body case survives a round
 * trip with every field set; a stream of frames decodes the same however it is cut; the
 * decoder rejects oversized, empty, garbage, unknown and truncated frames with the right
 * code and never holds more than one frame; each body case says the minor that added it;
 * Hellos are judged by magic, major and role; and
 * the blocking fd helpers frame, time out and see a vanished peer without SIGPIPE.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "proto/frame.h"
#include "tests/common/pb_field_size.h"

/* ---- messages of any type with every field set, built from their descriptors ---- */

#define FILL_MAX_DEPTH 8
#define FILL_REPEATED 2

static unsigned fill_seed;

static ProtobufCMessage *new_filled(const ProtobufCMessageDescriptor *desc, int depth);

static void fill_bytes(ProtobufCBinaryData *bin, unsigned v)
{
    bin->len = 3 + v % 5;
    bin->data = malloc(bin->len);
    cr_assert_not_null(bin->data);
    for (size_t i = 0; i < bin->len; i++)
        bin->data[i] = (uint8_t)(v + i * 97); /* includes NULs and high bytes */
}

/* Writes one distinct, non-default value of f's type at p. */
static void fill_value(const ProtobufCFieldDescriptor *f, void *p, int depth)
{
    const ProtobufCEnumDescriptor *e;
    unsigned v = ++fill_seed;
    char *s;

    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        *(int32_t *)p = -(int32_t)v;
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        *(uint32_t *)p = v * 1000003u;
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        *(int64_t *)p = -(int64_t)v * 1000000007;
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        *(uint64_t *)p = (uint64_t)v << 35 | v;
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        *(float *)p = (float)v + 0.5f;
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        *(double *)p = (double)v + 0.25;
        break;
    case PROTOBUF_C_TYPE_BOOL:
        *(protobuf_c_boolean *)p = 1;
        break;
    case PROTOBUF_C_TYPE_ENUM:
        e = f->descriptor;
        *(int *)p = e->values[e->n_values - 1].value;
        break;
    case PROTOBUF_C_TYPE_STRING:
        s = malloc(32);
        cr_assert_not_null(s);
        snprintf(s, 32, "%s-%u-\xc3\xa9", f->name, v);
        *(char **)p = s;
        break;
    case PROTOBUF_C_TYPE_BYTES:
        fill_bytes(p, v);
        break;
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)p = new_filled(f->descriptor, depth + 1);
        break;
    }
}

static void fill_repeated(const ProtobufCFieldDescriptor *f, char *msg, int depth)
{
    size_t size = pb_field_elem_size(f->type);
    char *array;

    if (f->type == PROTOBUF_C_TYPE_MESSAGE && depth >= FILL_MAX_DEPTH)
        return;
    array = calloc(FILL_REPEATED, size);
    cr_assert_not_null(array);
    for (size_t i = 0; i < FILL_REPEATED; i++)
        fill_value(f, array + i * size, depth);
    *(size_t *)(msg + f->quantifier_offset) = FILL_REPEATED;
    *(void **)(msg + f->offset) = array;
}

/* Sets every field; of each oneof only the first member. */
static void fill_message(ProtobufCMessage *message, int depth)
{
    const ProtobufCMessageDescriptor *desc = message->descriptor;
    char *msg = (char *)message;

    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];

        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            fill_repeated(f, msg, depth);
            continue;
        }
        if (f->type == PROTOBUF_C_TYPE_MESSAGE && depth >= FILL_MAX_DEPTH)
            continue;
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            if (*(uint32_t *)(msg + f->quantifier_offset) != 0)
                continue;
            *(uint32_t *)(msg + f->quantifier_offset) = f->id;
        }
        fill_value(f, msg + f->offset, depth);
    }
}

static ProtobufCMessage *new_filled(const ProtobufCMessageDescriptor *desc, int depth)
{
    ProtobufCMessage *msg = malloc(desc->sizeof_message);

    cr_assert_not_null(msg);
    desc->message_init(msg);
    fill_message(msg, depth);
    return msg;
}

/* An envelope with body case `field` filled in; free with free_filled_envelope(). */
static void make_envelope(Gs__Envelope *env, const ProtobufCFieldDescriptor *field,
                          uint64_t request_id)
{
    gs__envelope__init(env);
    env->request_id = request_id;
    env->body_case = (Gs__Envelope__BodyCase)field->id;
    *(ProtobufCMessage **)((char *)env + field->offset) = new_filled(field->descriptor, 1);
}

static void free_filled_envelope(Gs__Envelope *env)
{
    const ProtobufCFieldDescriptor *field = protobuf_c_message_descriptor_get_field(
        &gs__envelope__descriptor, (unsigned)env->body_case);

    protobuf_c_message_free_unpacked(*(ProtobufCMessage **)((char *)env + field->offset), NULL);
}

static const ProtobufCFieldDescriptor *body_field(Gs__Envelope__BodyCase body)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&gs__envelope__descriptor, (unsigned)body);

    cr_assert_not_null(f);
    return f;
}

static void encode_ok(const Gs__Envelope *env, struct gs_buf *out)
{
    cr_assert_eq(gs_proto_encode(env, out), 0);
}

/* ---- round trips ---- */

Test(frame, round_trips_every_body_case_with_every_field_set)
{
    const ProtobufCMessageDescriptor *desc = &gs__envelope__descriptor;
    int cases = 0;

    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];
        struct gs_buf first = GS_BUF_INIT, second = GS_BUF_INIT;
        Gs__Envelope env, *back = NULL;

        if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
            continue;
        cases++;
        make_envelope(&env, f, 1000 + i);
        encode_ok(&env, &first);
        cr_assert_eq(gs_proto_decode(first.data + 4, first.len - 4, &back), 0, "%s", f->name);
        cr_assert_eq(back->body_case, env.body_case, "%s", f->name);
        cr_assert_eq(back->request_id, 1000 + i);
        cr_assert_str_eq(gs_proto_body_name(back->body_case), f->name);
        encode_ok(back, &second);
        cr_assert_eq(second.len, first.len, "%s changed size in a round trip", f->name);
        cr_assert(memcmp(first.data, second.data, first.len) == 0, "%s changed", f->name);
        gs_proto_envelope_free(back);
        free_filled_envelope(&env);
        gs_buf_release(&first);
        gs_buf_release(&second);
    }
    cr_assert_eq(cases, 90, "every body case is covered (%d)", cases);
}

/* The newest body case has a minor: a body added later must be given one too, or a CLI
 * would send it to a gschedd that drops the connection on it. */
Test(frame, each_body_case_says_the_protocol_minor_that_added_it)
{
    const ProtobufCMessageDescriptor *desc = &gs__envelope__descriptor;
    uint32_t newest = 0;

    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];
        uint32_t minor = gs_proto_body_minor((Gs__Envelope__BodyCase)f->id);

        if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
            continue;
        cr_assert_leq(minor, GS_PROTO_VERSION_MINOR, "%s", f->name);
        if (f->id > newest)
            newest = f->id;
    }
    cr_assert_gt(gs_proto_body_minor((Gs__Envelope__BodyCase)newest), 0,
                 "the newest body (%u) has its minor", newest);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_SUSPEND_REQUEST), 26);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_STEP_ATTACH), GS_PROTO_MINOR_STEP_GRES);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_STEP_OUTPUT_RESUME),
                 GS_PROTO_MINOR_STEP_GRES);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_DIAG_REQUEST), 22);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_JOB_KV_GET), GS_PROTO_MINOR_JOB_KV);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_JOB_LIMIT_UPDATE),
                 GS_PROTO_MINOR_JOB_LIMIT);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_ALLOC_REQUEST), GS_PROTO_MINOR_ALLOC);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_SHARD_READ), GS_PROTO_MINOR_DATA);
    cr_assert_eq(gs_proto_body_minor(GS__ENVELOPE__BODY_SUBMIT_REQUEST), 0, "1.0's");
}

static Gs__Envelope *round_trip(const Gs__Envelope *env)
{
    struct gs_buf frame = GS_BUF_INIT;
    Gs__Envelope *back = NULL;

    encode_ok(env, &frame);
    cr_assert_eq(gs_proto_decode(frame.data + 4, frame.len - 4, &back), 0);
    gs_buf_release(&frame);
    return back;
}

/* Builds a NodeRegister on this stack and returns its decoded copy. */
static Gs__Envelope *node_register_round_trip(void)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__NodeRegister reg = GS__NODE_REGISTER__INIT;
    Gs__NodeTopology topo = GS__NODE_TOPOLOGY__INIT;
    Gs__Gpu gpu0 = GS__GPU__INIT, gpu1 = GS__GPU__INIT, *gpus[] = {&gpu0, &gpu1};
    Gs__GpuLink link = GS__GPU_LINK__INIT, *links[] = {&link};
    uint32_t near0[] = {0, 1, 2, 3};
    char *features[] = {"h100", "nvlink"};

    topo.node_name = "n3";
    topo.cores = 64;
    topo.memory_mib = 2u << 20;
    topo.n_features = 2;
    topo.features = features;
    gpu0.pci_bus_id = "0000:17:00.0";
    gpu0.numa_node = -1;
    gpu0.n_local_cores = 4;
    gpu0.local_cores = near0;
    gpu1.index = 1;
    gpu1.numa_node = 1;
    topo.n_gpus = 2;
    topo.gpus = gpus;
    link.gpu_b = 1;
    link.type = GS__LINK_TYPE__LINK_TYPE_NVLINK;
    link.nvlink_count = 18;
    topo.n_gpu_links = 1;
    topo.gpu_links = links;
    reg.topology = &topo;
    env.body_case = GS__ENVELOPE__BODY_NODE_REGISTER;
    env.node_register = &reg;
    return round_trip(&env);
}

Test(frame, round_trips_topology_with_unknown_numa_and_gpu_links)
{
    Gs__Envelope *back = node_register_round_trip();
    const Gs__NodeTopology *t = back->node_register->topology;

    cr_assert_str_eq(t->node_name, "n3");
    cr_assert_eq(t->memory_mib, 2u << 20);
    cr_assert_str_eq(t->features[1], "nvlink");
    cr_assert_eq(t->n_gpus, 2);
    cr_assert_eq(t->gpus[0]->numa_node, -1);
    cr_assert_str_eq(t->gpus[0]->pci_bus_id, "0000:17:00.0");
    cr_assert_eq(t->gpus[0]->n_local_cores, 4);
    cr_assert_eq(t->gpus[0]->local_cores[3], 3);
    cr_assert_eq(t->gpus[1]->index, 1);
    cr_assert_str_eq(t->gpus[1]->uuid, "");
    cr_assert_eq(t->gpu_links[0]->gpu_b, 1);
    cr_assert_eq(t->gpu_links[0]->type, GS__LINK_TYPE__LINK_TYPE_NVLINK);
    cr_assert_eq(t->gpu_links[0]->nvlink_count, 18);
    gs_proto_envelope_free(back);
}

/* Builds a SubmitRequest on this stack and returns its decoded copy. */
static Gs__Envelope *submit_round_trip(void)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__SubmitRequest submit = GS__SUBMIT_REQUEST__INIT;
    Gs__JobSpec spec = GS__JOB_SPEC__INIT;
    Gs__Resources res = GS__RESOURCES__INIT;
    Gs__RunSpec run = GS__RUN_SPEC__INIT;
    Gs__Dependency dep = GS__DEPENDENCY__INIT, *deps[] = {&dep};
    Gs__RunSpec__EnvEntry var = GS__RUN_SPEC__ENV_ENTRY__INIT, *vars[] = {&var};
    char *argv[] = {"python3", "train.py", "--lr=3e-4"};

    spec.name = "llama";
    spec.priority = -5;
    dep.type = GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTEROK;
    dep.job_id = 41;
    spec.n_depends_on = 1;
    spec.depends_on = deps;
    res.nodes = 2;
    res.gpus_per_node = 8;
    res.cpus_case = GS__RESOURCES__CPUS_CPUS_PER_GPU;
    res.cpus_per_gpu = 0; /* a oneof member is sent even when zero */
    res.time_limit_s = 86400;
    spec.resources = &res;
    run.n_argv = 3;
    run.argv = argv;
    var.key = "NCCL_DEBUG";
    var.value = "WARN";
    run.n_env = 1;
    run.env = vars;
    spec.run = &run;
    submit.spec = &spec;
    env.request_id = 9;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REQUEST;
    env.submit_request = &submit;
    return round_trip(&env);
}

Test(frame, round_trips_job_spec_with_env_map_and_cpus_choice)
{
    Gs__Envelope *back = submit_round_trip();
    const Gs__JobSpec *s = back->submit_request->spec;

    cr_assert_eq(back->request_id, 9);
    cr_assert_str_eq(s->name, "llama");
    cr_assert_eq(s->priority, -5);
    cr_assert_eq(s->depends_on[0]->type, GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTEROK);
    cr_assert_eq(s->depends_on[0]->job_id, 41);
    cr_assert_eq(s->resources->cpus_case, GS__RESOURCES__CPUS_CPUS_PER_GPU);
    cr_assert_eq(s->resources->cpus_per_gpu, 0);
    cr_assert_eq(s->resources->time_limit_s, 86400);
    cr_assert_eq(s->run->n_argv, 3);
    cr_assert_str_eq(s->run->argv[2], "--lr=3e-4");
    cr_assert_str_eq(s->run->env[0]->key, "NCCL_DEBUG");
    cr_assert_str_eq(s->run->env[0]->value, "WARN");
    cr_assert_str_eq(s->run->script, "");
    gs_proto_envelope_free(back);
}

Test(frame, writes_payload_length_as_big_endian_header)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__LogsReply logs = GS__LOGS_REPLY__INIT;
    struct gs_buf frame = GS_BUF_INIT;
    uint8_t data[70000] = {0};
    size_t payload;

    logs.data.len = sizeof(data);
    logs.data.data = data;
    env.body_case = GS__ENVELOPE__BODY_LOGS_REPLY;
    env.logs_reply = &logs;
    encode_ok(&env, &frame);
    payload = frame.len - 4;
    cr_assert_gt(payload, 65536);
    cr_assert_eq((uint8_t)frame.data[0], (payload >> 24) & 0xff);
    cr_assert_eq((uint8_t)frame.data[1], (payload >> 16) & 0xff);
    cr_assert_eq((uint8_t)frame.data[2], (payload >> 8) & 0xff);
    cr_assert_eq((uint8_t)frame.data[3], payload & 0xff);
    gs_buf_release(&frame);
}

Test(frame, refuses_to_encode_envelope_without_body)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct gs_buf frame = GS_BUF_INIT;

    cr_assert_eq(gs_proto_encode(&env, &frame), -EINVAL);
    env.body_case = GS__ENVELOPE__BODY_HEARTBEAT; /* case set, pointer NULL */
    cr_assert_eq(gs_proto_encode(&env, &frame), -EINVAL);
    env.body_case = (Gs__Envelope__BodyCase)1000;
    cr_assert_eq(gs_proto_encode(&env, &frame), -EINVAL);
    cr_assert_eq(frame.len, 0);
    gs_buf_release(&frame);
}

Test(frame, names_body_cases_and_reasons)
{
    cr_assert_str_eq(gs_proto_body_name(GS__ENVELOPE__BODY_HELLO), "hello");
    cr_assert_str_eq(gs_proto_body_name(GS__ENVELOPE__BODY_CANCEL_REPLY), "cancel_reply");
    cr_assert_str_eq(gs_proto_body_name(GS__ENVELOPE__BODY__NOT_SET), "none");
    cr_assert_str_eq(gs_proto_body_name((Gs__Envelope__BodyCase)1), "unknown");
    cr_assert(!gs_proto_body_known((Gs__Envelope__BodyCase)1)); /* request_id, not a body */
    cr_assert(gs_proto_body_known(GS__ENVELOPE__BODY_JOB_STATE_CHANGE));
    cr_assert_str_eq(gs_proto_reason(GS_PROTO_ERR_OVERSIZED), "oversized_frame");
    cr_assert_str_eq(gs_proto_reason(GS_PROTO_ERR_TRUNCATED), "truncated_frame");
    cr_assert_str_eq(gs_proto_reason(GS_PROTO_ERR_VERSION), "version_mismatch");
    cr_assert_str_eq(gs_proto_reason(0), "closed");
    cr_assert_str_eq(gs_proto_reason(-ECONNRESET), "io_error");
}

/* ---- the decoder over a stream ---- */

static const Gs__Envelope__BodyCase stream_bodies[] = {
    GS__ENVELOPE__BODY_HELLO,      GS__ENVELOPE__BODY_NODE_REGISTER,
    GS__ENVELOPE__BODY_HEARTBEAT,  GS__ENVELOPE__BODY_LAUNCH_TASKS,
    GS__ENVELOPE__BODY_TASK_EXIT,  GS__ENVELOPE__BODY_QUEUE_REPLY,
    GS__ENVELOPE__BODY_LOGS_REPLY, GS__ENVELOPE__BODY_JOB_STATE_CHANGE,
};
#define NSTREAM (sizeof(stream_bodies) / sizeof(stream_bodies[0]))

static size_t stream_max_frame; /* the largest frame build_stream() made, header included */

static void encode_counted(const Gs__Envelope *env, struct gs_buf *stream)
{
    size_t before = stream->len;

    encode_ok(env, stream);
    if (stream->len - before > stream_max_frame)
        stream_max_frame = stream->len - before;
}

/* Several frames back to back, one of them larger than a read buffer's worth in pieces. */
static void build_stream(struct gs_buf *stream)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__LogsReply logs = GS__LOGS_REPLY__INIT;
    static uint8_t data[6000];

    for (size_t i = 0; i < NSTREAM; i++) {
        make_envelope(&env, body_field(stream_bodies[i]), i + 1);
        encode_counted(&env, stream);
        free_filled_envelope(&env);
    }
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7);
    logs.data.len = sizeof(data);
    logs.data.data = data;
    gs__envelope__init(&env);
    env.body_case = GS__ENVELOPE__BODY_LOGS_REPLY;
    env.logs_reply = &logs;
    encode_counted(&env, stream);
}

/* Feeds len bytes; re-encodes every frame that completes into out. Returns frames or error. */
static int feed(struct gs_proto_decoder *dec, const uint8_t *p, size_t len, struct gs_buf *out)
{
    Gs__Envelope *env;
    int rc, frames = 0;

    while ((rc = gs_proto_decoder_next(dec, &p, &len, &env)) == 1) {
        encode_ok(env, out);
        gs_proto_envelope_free(env);
        frames++;
    }
    if (rc < 0)
        return rc;
    cr_assert_eq(len, 0, "a decoder that returns 0 has consumed its input");
    return frames;
}

static void assert_same_stream(const struct gs_buf *want, const struct gs_buf *got, size_t cut)
{
    cr_assert_eq(got->len, want->len, "cut at %zu", cut);
    cr_assert(memcmp(got->data, want->data, want->len) == 0, "cut at %zu", cut);
}

Test(frame, decodes_stream_split_at_every_byte_boundary)
{
    struct gs_buf stream = GS_BUF_INIT, out = GS_BUF_INIT;
    struct gs_proto_decoder dec;
    const uint8_t *p;
    int n1, n2;

    build_stream(&stream);
    p = (const uint8_t *)stream.data;
    for (size_t cut = 0; cut <= stream.len; cut++) {
        gs_proto_decoder_init(&dec, 0);
        gs_buf_reset(&out);
        n1 = feed(&dec, p, cut, &out);
        n2 = feed(&dec, p + cut, stream.len - cut, &out);
        cr_assert(n1 >= 0 && n2 >= 0, "cut at %zu: %d %d", cut, n1, n2);
        cr_assert_eq((size_t)(n1 + n2), NSTREAM + 1, "cut at %zu", cut);
        cr_assert_eq(gs_proto_decoder_finish(&dec), 0);
        assert_same_stream(&stream, &out, cut);
        gs_proto_decoder_release(&dec);
    }
    gs_buf_release(&stream);
    gs_buf_release(&out);
}

Test(frame, decodes_stream_fed_one_byte_at_a_time)
{
    struct gs_buf stream = GS_BUF_INIT, out = GS_BUF_INIT;
    struct gs_proto_decoder dec;
    int frames = 0, n;

    build_stream(&stream);
    gs_proto_decoder_init(&dec, 0);
    for (size_t i = 0; i < stream.len; i++) {
        n = feed(&dec, (const uint8_t *)stream.data + i, 1, &out);
        cr_assert_geq(n, 0);
        frames += n;
        cr_assert_lt(gs_proto_decoder_buffered(&dec), stream_max_frame);
        cr_assert_leq(dec.payload_cap, stream_max_frame - 4);
    }
    cr_assert_eq(frames, (int)NSTREAM + 1);
    cr_assert_eq(gs_proto_decoder_finish(&dec), 0);
    assert_same_stream(&stream, &out, 0);
    gs_proto_decoder_release(&dec);
    gs_buf_release(&stream);
    gs_buf_release(&out);
}

Test(frame, decodes_stream_in_random_chunks)
{
    struct gs_buf stream = GS_BUF_INIT, out = GS_BUF_INIT;
    struct gs_proto_decoder dec;
    uint32_t rng = 12345;
    size_t at, n;

    build_stream(&stream);
    for (int round = 0; round < 200; round++) {
        gs_proto_decoder_init(&dec, 0);
        gs_buf_reset(&out);
        for (at = 0; at < stream.len; at += n) {
            rng = rng * 1103515245u + 12345u;
            n = 1 + (rng >> 8) % 3000;
            if (n > stream.len - at)
                n = stream.len - at;
            cr_assert_geq(feed(&dec, (const uint8_t *)stream.data + at, n, &out), 0);
        }
        assert_same_stream(&stream, &out, (size_t)round);
        gs_proto_decoder_release(&dec);
    }
    gs_buf_release(&stream);
    gs_buf_release(&out);
}

/* ---- the decoder's refusals ---- */

static int decode_bytes(struct gs_proto_decoder *dec, const uint8_t *bytes, size_t len)
{
    Gs__Envelope *env = NULL;
    int rc = gs_proto_decoder_next(dec, &bytes, &len, &env);

    if (rc == 1)
        gs_proto_envelope_free(env);
    return rc;
}

Test(frame, rejects_frame_when_length_exceeds_max)
{
    const uint8_t header[] = {0x00, 0x00, 0x04, 0x01, 'x', 'y'};
    struct gs_proto_decoder dec;

    gs_proto_decoder_init(&dec, 1024);
    cr_assert_eq(decode_bytes(&dec, header, sizeof(header)), GS_PROTO_ERR_OVERSIZED);
    cr_assert_eq(dec.frame_len, 1025);
    cr_assert_eq(dec.payload_cap, 0, "nothing of an oversized frame is stored");
    gs_proto_decoder_release(&dec);
}

Test(frame, rejects_default_oversized_frame_such_as_an_http_request)
{
    const char *http = "GET / HTTP/1.1\r\nHost: scheduler\r\n\r\n";
    struct gs_proto_decoder dec;

    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(dec.max_frame, GS_PROTO_MAX_FRAME_DEFAULT);
    cr_assert_eq(decode_bytes(&dec, (const uint8_t *)http, strlen(http)), GS_PROTO_ERR_OVERSIZED);
    cr_assert_eq(dec.frame_len, 0x47455420u);
    gs_proto_decoder_release(&dec);
}

Test(frame, accepts_frame_of_exactly_max_length)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__LogsReply logs = GS__LOGS_REPLY__INIT;
    struct gs_buf frame = GS_BUF_INIT;
    struct gs_proto_decoder dec;
    uint8_t data[1000] = {0};

    logs.data.len = sizeof(data);
    logs.data.data = data;
    env.body_case = GS__ENVELOPE__BODY_LOGS_REPLY;
    env.logs_reply = &logs;
    encode_ok(&env, &frame);
    gs_proto_decoder_init(&dec, (uint32_t)(frame.len - 4));
    cr_assert_eq(decode_bytes(&dec, (const uint8_t *)frame.data, frame.len), 1);
    gs_proto_decoder_release(&dec);
    gs_proto_decoder_init(&dec, (uint32_t)(frame.len - 5));
    cr_assert_eq(decode_bytes(&dec, (const uint8_t *)frame.data, frame.len),
                 GS_PROTO_ERR_OVERSIZED);
    gs_proto_decoder_release(&dec);
    gs_buf_release(&frame);
}

Test(frame, rejects_zero_length_frame)
{
    const uint8_t empty[] = {0, 0, 0, 0};
    struct gs_proto_decoder dec;

    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(decode_bytes(&dec, empty, sizeof(empty)), GS_PROTO_ERR_EMPTY);
    gs_proto_decoder_release(&dec);
    cr_assert_eq(gs_proto_decode(empty, 0, NULL), GS_PROTO_ERR_EMPTY);
}

Test(frame, rejects_garbage_payload_as_malformed)
{
    const uint8_t endless_varint[] = {0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    const uint8_t overlong_string[] = {0, 0, 0, 4, 0x82, 0x01, 0x50, 'a'}; /* hello, 80 bytes */
    struct gs_proto_decoder dec;

    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(decode_bytes(&dec, endless_varint, sizeof(endless_varint)),
                 GS_PROTO_ERR_MALFORMED);
    gs_proto_decoder_release(&dec);
    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(decode_bytes(&dec, overlong_string, sizeof(overlong_string)),
                 GS_PROTO_ERR_MALFORMED);
    gs_proto_decoder_release(&dec);
}

Test(frame, rejects_envelope_without_body_as_unknown_message)
{
    const uint8_t only_request_id[] = {0, 0, 0, 2, 0x08, 0x05};
    struct gs_proto_decoder dec;

    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(decode_bytes(&dec, only_request_id, sizeof(only_request_id)),
                 GS_PROTO_ERR_UNKNOWN);
    gs_proto_decoder_release(&dec);
}

Test(frame, rejects_envelope_with_body_from_a_newer_protocol_as_unknown_message)
{
    /* request_id 5, then field 1000 (length-delimited, empty): a body case we do not know */
    const uint8_t newer[] = {0, 0, 0, 5, 0x08, 0x05, 0xc2, 0x3e, 0x00};
    struct gs_proto_decoder dec;

    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(decode_bytes(&dec, newer, sizeof(newer)), GS_PROTO_ERR_UNKNOWN);
    gs_proto_decoder_release(&dec);
}

Test(frame, reports_truncation_inside_header_and_inside_payload)
{
    const uint8_t frame[] = {0, 0, 0, 2, 0x08, 0x05};
    struct gs_proto_decoder dec;

    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(gs_proto_decoder_finish(&dec), 0, "an empty stream is not truncated");
    cr_assert_eq(decode_bytes(&dec, frame, 3), 0);
    cr_assert_eq(gs_proto_decoder_buffered(&dec), 3);
    cr_assert_eq(gs_proto_decoder_finish(&dec), GS_PROTO_ERR_TRUNCATED);
    gs_proto_decoder_release(&dec);

    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(decode_bytes(&dec, frame, 5), 0);
    cr_assert_eq(gs_proto_decoder_buffered(&dec), 5);
    cr_assert_eq(gs_proto_decoder_finish(&dec), GS_PROTO_ERR_TRUNCATED);
    gs_proto_decoder_release(&dec);
}

Test(frame, keeps_reporting_the_first_error)
{
    const uint8_t bad[] = {0, 0, 0, 0, 0, 0, 0, 2, 0x08, 0x05};
    const uint8_t *p = bad;
    size_t len = sizeof(bad);
    struct gs_proto_decoder dec;
    Gs__Envelope *env = NULL;

    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(gs_proto_decoder_next(&dec, &p, &len, &env), GS_PROTO_ERR_EMPTY);
    cr_assert_eq(len, sizeof(bad) - 4);
    cr_assert_eq(gs_proto_decoder_next(&dec, &p, &len, &env), GS_PROTO_ERR_EMPTY);
    cr_assert_eq(len, sizeof(bad) - 4, "nothing is consumed after an error");
    cr_assert_eq(gs_proto_decoder_finish(&dec), GS_PROTO_ERR_EMPTY);
    cr_assert_null(env);
    gs_proto_decoder_release(&dec);
}

Test(frame, grows_payload_buffer_only_as_bytes_arrive)
{
    uint8_t chunk[64] = {0xff, 0xff, 0xff, 0xff}; /* announces 4 GiB - 1 */
    struct gs_proto_decoder dec;

    gs_proto_decoder_init(&dec, UINT32_MAX);
    cr_assert_eq(decode_bytes(&dec, chunk, sizeof(chunk)), 0);
    cr_assert_leq(dec.payload_cap, 4096);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(decode_bytes(&dec, chunk, sizeof(chunk)), 0);
    cr_assert_eq(gs_proto_decoder_buffered(&dec), 101 * 64);
    cr_assert_leq(dec.payload_cap, 2 * 101 * 64);
    gs_proto_decoder_release(&dec);
}

/* Found by tests/fuzz/fuzz_frame: a chunk that ended right after the header made the
 * decoder take no bytes into its buffer before it had one (NULL + 0, clang's UBSan). */
Test(frame, waits_for_the_payload_when_a_chunk_ends_with_the_header)
{
    struct gs_buf frame = GS_BUF_INIT;
    struct gs_proto_decoder dec;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__QueueRequest queue = GS__QUEUE_REQUEST__INIT;

    env.body_case = GS__ENVELOPE__BODY_QUEUE_REQUEST;
    env.queue_request = &queue;
    queue.limit = 3;
    encode_ok(&env, &frame);
    gs_proto_decoder_init(&dec, 0);
    cr_assert_eq(decode_bytes(&dec, (const uint8_t *)frame.data, GS_PROTO_HEADER_SIZE), 0);
    cr_assert_eq(decode_bytes(&dec, (const uint8_t *)frame.data, 0), 0);
    cr_assert_eq(gs_proto_decoder_buffered(&dec), GS_PROTO_HEADER_SIZE);
    cr_assert_eq(decode_bytes(&dec, (const uint8_t *)frame.data + GS_PROTO_HEADER_SIZE,
                              frame.len - GS_PROTO_HEADER_SIZE),
                 1);
    cr_assert_eq(gs_proto_decoder_finish(&dec), 0);
    gs_proto_decoder_release(&dec);
    gs_buf_release(&frame);
}

/* Found by tests/fuzz/fuzz_frame: protobuf-c kept a field numbered 0 (tag 81 00) as an
 * unknown field, and the envelope, packed again, no longer unpacked. */
Test(frame, rejects_a_field_numbered_zero_as_malformed)
{
    /* Hello: magic, version 1, then field 0 as fixed64 (tag 81 00) or as a varint (80 00). */
    const uint8_t hello[] = {0x82, 0x01, 0x11, 0x0d, 0x48, 0x43, 0x53, 0x47, 0x10, 0x01,
                             0x81, 0x00, 1,    2,    3,    4,    5,    6,    7,    8};
    const uint8_t varint[] = {0x82, 0x01, 0x0a, 0x0d, 0x48, 0x43, 0x53,
                              0x47, 0x10, 0x01, 0x80, 0x00, 0x05};
    /* SubmitRequest whose JobSpec holds field 0; then the same with field 1000 instead. */
    uint8_t submit[] = {0xc2, 0x02, 0x05, 0x0a, 0x03, 0x80, 0x00, 0x05};
    Gs__Envelope *env = NULL;

    cr_assert_eq(gs_proto_decode(hello, sizeof(hello), &env), GS_PROTO_ERR_MALFORMED);
    cr_assert_eq(gs_proto_decode(varint, sizeof(varint), &env), GS_PROTO_ERR_MALFORMED);
    cr_assert_eq(gs_proto_decode(submit, sizeof(submit), &env), GS_PROTO_ERR_MALFORMED);
    cr_assert_null(env);
    submit[5] = 0xc0; /* field 1000, varint (tag c0 3e): an unknown field, kept */
    submit[6] = 0x3e;
    cr_assert_eq(gs_proto_decode(submit, sizeof(submit), &env), 0);
    gs_proto_envelope_free(env);
}

/* gschedd refuses a CLI request holding a field it does not know; the path says which. */
Test(frame, finds_and_names_a_field_this_build_does_not_know)
{
    /* SubmitRequest (envelope field 40) whose JobSpec (1) holds field 1000 = 5. */
    const uint8_t submit[] = {0xc2, 0x02, 0x05, 0x0a, 0x03, 0xc0, 0x3e, 0x05};
    Gs__Envelope *env = NULL, plain = GS__ENVELOPE__INIT;
    Gs__NodesRequest nodes = GS__NODES_REQUEST__INIT;
    char path[32], names[96];

    cr_assert_eq(gs_proto_decode(submit, sizeof(submit), &env), 0);
    cr_assert(gs_proto_unknown_field(&env->base, path, sizeof(path)));
    cr_assert_str_eq(path, "40.1.1000");
    gs_proto_field_names(&gs__envelope__descriptor, path, false, names, sizeof(names));
    cr_assert_str_eq(names, "submit_request.spec.1000");
    gs_proto_field_names(&gs__envelope__descriptor, path, true, names, sizeof(names));
    cr_assert_str_eq(names, "submit_request (40).spec (1).1000");
    /* A path cut short by its buffer is cut, never overrun. */
    cr_assert(gs_proto_unknown_field(&env->base, path, 6));
    cr_assert_str_eq(path, "40.1.");
    gs_proto_envelope_free(env);
    /* A field this build knows, by the numbers an older peer would send. */
    gs_proto_field_names(&gs__envelope__descriptor, "40.1.999.3", false, names, sizeof(names));
    cr_assert_str_eq(names, "submit_request.spec.999.3");
    plain.body_case = GS__ENVELOPE__BODY_NODES_REQUEST;
    plain.nodes_request = &nodes;
    cr_assert_not(gs_proto_unknown_field(&plain.base, path, sizeof(path)));
    cr_assert_str_eq(path, "");
}

Test(frame, rejects_payload_that_would_unpack_beyond_its_budget)
{
    enum { NJOBS = 200000 };
    Gs__Envelope env = GS__ENVELOPE__INIT, *back = NULL;
    Gs__QueueReply queue = GS__QUEUE_REPLY__INIT;
    Gs__JobInfo *jobs = calloc(NJOBS, sizeof(*jobs));
    Gs__JobInfo **ptrs = calloc(NJOBS, sizeof(*ptrs));
    struct gs_buf frame = GS_BUF_INIT;

    cr_assert(jobs != NULL && ptrs != NULL);
    for (size_t i = 0; i < NJOBS; i++) {
        gs__job_info__init(&jobs[i]); /* empty: two bytes each on the wire */
        ptrs[i] = &jobs[i];
    }
    queue.n_jobs = NJOBS;
    queue.jobs = ptrs;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REPLY;
    env.queue_reply = &queue;
    encode_ok(&env, &frame);
    cr_assert_lt(frame.len, 1u << 20);
    cr_assert_eq(gs_proto_decode(frame.data + 4, frame.len - 4, &back), GS_PROTO_ERR_MALFORMED);
    cr_assert_null(back);

    queue.n_jobs = 1000; /* the same shape, small enough to be believable */
    gs_buf_reset(&frame);
    encode_ok(&env, &frame);
    cr_assert_eq(gs_proto_decode(frame.data + 4, frame.len - 4, &back), 0);
    cr_assert_eq(back->queue_reply->n_jobs, 1000);
    gs_proto_envelope_free(back);
    gs_buf_release(&frame);
    free(jobs);
    free(ptrs);
}

/* ---- hello ---- */

Test(frame, accepts_hello_of_same_major_and_other_minor)
{
    Gs__Hello hello;

    gs_proto_hello_init(&hello, GS__ROLE__ROLE_WORKER, "n3");
    cr_assert_eq(hello.magic, GS_PROTO_MAGIC);
    cr_assert_str_eq(hello.name, "n3");
    cr_assert_str_neq(hello.software_version, "");
    cr_assert_eq(gs_proto_hello_check(&hello, 0), 0);
    hello.protocol_minor = GS_PROTO_VERSION_MINOR + 7;
    cr_assert_eq(gs_proto_hello_check(&hello, GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER)), 0);
}

Test(frame, refuses_hello_with_bad_magic_other_major_or_role)
{
    uint32_t workers = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER);
    Gs__Hello hello;

    gs_proto_hello_init(&hello, GS__ROLE__ROLE_CLI, "gsched");
    cr_assert_eq(gs_proto_hello_check(&hello, workers), GS_PROTO_ERR_ROLE);
    hello.role = (Gs__Role)4000;
    cr_assert_eq(gs_proto_hello_check(&hello, 0), GS_PROTO_ERR_ROLE);
    hello.role = GS__ROLE__ROLE_UNSPECIFIED;
    cr_assert_eq(gs_proto_hello_check(&hello, 0), GS_PROTO_ERR_ROLE);
    hello.role = GS__ROLE__ROLE_WORKER;
    hello.protocol_major = GS_PROTO_VERSION_MAJOR + 1;
    cr_assert_eq(gs_proto_hello_check(&hello, workers), GS_PROTO_ERR_VERSION);
    hello.magic = 0x48545450; /* "HTTP" */
    cr_assert_eq(gs_proto_hello_check(&hello, workers), GS_PROTO_ERR_HANDSHAKE);
    cr_assert_str_eq(gs_proto_role_name(GS__ROLE__ROLE_SCHEDULER), "scheduler");
    cr_assert_str_eq(gs_proto_role_name((Gs__Role)99), "unknown");
}

/* ---- blocking fd helpers ---- */

static void make_pair(int sv[2])
{
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
}

static void hello_envelope(Gs__Envelope *env, Gs__Hello *hello, Gs__Role role, const char *name)
{
    gs_proto_hello_init(hello, role, name);
    gs__envelope__init(env);
    env->body_case = GS__ENVELOPE__BODY_HELLO;
    env->hello = hello;
}

Test(frame, blocking_helpers_carry_frames_over_a_socket)
{
    Gs__Envelope env, *back = NULL;
    Gs__Hello hello;
    int sv[2];

    make_pair(sv);
    hello_envelope(&env, &hello, GS__ROLE__ROLE_CLI, "gsched");
    env.request_id = 77;
    cr_assert_eq(gs_proto_write_fd(sv[0], &env, 1000), 0);
    cr_assert_eq(gs_proto_write_fd(sv[0], &env, -1), 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(gs_proto_read_fd(sv[1], 0, 1000, &back), 0);
        cr_assert_eq(back->request_id, 77);
        cr_assert_str_eq(back->hello->name, "gsched");
        gs_proto_envelope_free(back);
    }
    close(sv[0]);
    cr_assert_eq(gs_proto_read_fd(sv[1], 0, 1000, &back), GS_PROTO_ERR_PEER_CLOSED);
    close(sv[1]);
}

Test(frame, blocking_read_reports_timeout_truncation_and_oversize)
{
    const uint8_t part[] = {0, 0, 0, 9, 0x08};
    const uint8_t big[] = {0, 0, 1, 0};
    Gs__Envelope *back = NULL;
    int sv[2];

    make_pair(sv);
    cr_assert_eq(gs_proto_read_fd(sv[1], 0, 0, &back), -ETIMEDOUT);
    cr_assert_eq(write(sv[0], big, sizeof(big)), (ssize_t)sizeof(big));
    cr_assert_eq(gs_proto_read_fd(sv[1], 255, 1000, &back), GS_PROTO_ERR_OVERSIZED);
    cr_assert_eq(write(sv[0], part, sizeof(part)), (ssize_t)sizeof(part));
    cr_assert_eq(gs_proto_read_fd(sv[1], 0, 10, &back), -ETIMEDOUT, "stalls mid-frame");
    close(sv[0]);
    close(sv[1]);

    make_pair(sv);
    cr_assert_eq(write(sv[0], part, sizeof(part)), (ssize_t)sizeof(part));
    close(sv[0]);
    cr_assert_eq(gs_proto_read_fd(sv[1], 0, 1000, &back), GS_PROTO_ERR_TRUNCATED);
    cr_assert_null(back);
    close(sv[1]);
}

Test(frame, blocking_write_to_vanished_peer_fails_without_sigpipe)
{
    Gs__Envelope env;
    Gs__Hello hello;
    int sv[2];

    make_pair(sv);
    close(sv[1]);
    hello_envelope(&env, &hello, GS__ROLE__ROLE_CLI, "gsched");
    cr_assert_eq(gs_proto_write_fd(sv[0], &env, 1000), -EPIPE);
    close(sv[0]);
}

Test(frame, blocking_handshake_checks_the_peer_hello)
{
    Gs__Envelope env, *peer = NULL;
    Gs__Hello hello;
    int sv[2];

    make_pair(sv);
    hello_envelope(&env, &hello, GS__ROLE__ROLE_SCHEDULER, "gschedd");
    cr_assert_eq(gs_proto_write_fd(sv[1], &env, 1000), 0);
    cr_assert_eq(gs_proto_handshake_fd(sv[0], GS__ROLE__ROLE_CLI, "gsched",
                                       GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER), 1000, &peer),
                 0);
    cr_assert_str_eq(peer->hello->name, "gschedd");
    gs_proto_envelope_free(peer);
    cr_assert_eq(gs_proto_read_fd(sv[1], 0, 1000, &peer), 0, "our hello went out");
    cr_assert_eq(peer->hello->role, GS__ROLE__ROLE_CLI);
    gs_proto_envelope_free(peer);

    hello.protocol_major = GS_PROTO_VERSION_MAJOR + 1;
    cr_assert_eq(gs_proto_write_fd(sv[1], &env, 1000), 0);
    cr_assert_eq(gs_proto_handshake_fd(sv[0], GS__ROLE__ROLE_CLI, "gsched", 0, 1000, NULL),
                 GS_PROTO_ERR_VERSION);
    close(sv[0]);
    close(sv[1]);
}

Test(frame, blocking_handshake_reports_a_reject)
{
    Gs__Envelope env = GS__ENVELOPE__INIT, *peer = NULL;
    Gs__HelloReject reject = GS__HELLO_REJECT__INIT;
    int sv[2];

    make_pair(sv);
    reject.reason = GS__REJECT_REASON__REJECT_REASON_SHUTTING_DOWN;
    env.body_case = GS__ENVELOPE__BODY_HELLO_REJECT;
    env.hello_reject = &reject;
    cr_assert_eq(gs_proto_write_fd(sv[1], &env, 1000), 0);
    cr_assert_eq(gs_proto_handshake_fd(sv[0], GS__ROLE__ROLE_CLI, "gsched", 0, 1000, &peer),
                 GS_PROTO_ERR_REJECTED);
    cr_assert_null(peer);
    close(sv[0]);
    close(sv[1]);
}
