/*
 * frame.c: packing and unpacking envelopes, and the incremental frame decoder.
 *
 * Everything read here comes from the network, so every length is checked before it is
 * used: the announced frame length against max_frame before any payload is stored, the
 * payload buffer grown only as bytes arrive (a peer that announces 16 MiB and sends 10
 * bytes costs 4 KiB), and unpacking runs under an allocation budget so that a small frame
 * cannot expand into a huge message. The decoder never resynchronises after an error: a
 * length-prefixed stream has no markers to find the next frame by.
 *
 * No global state; see frame.h for ownership.
 */
#include "proto/frame.h"
#include "proto/seal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAYLOAD_MIN_CAP 4096u
#define PAYLOAD_KEEP_CAP (64u * 1024u) /* larger buffers are freed once their frame is done */

const char *gs_proto_reason(int code)
{
    switch (code) {
    case 0:
        return "closed";
    case GS_PROTO_ERR_OVERSIZED:
        return "oversized_frame";
    case GS_PROTO_ERR_EMPTY:
        return "empty_frame";
    case GS_PROTO_ERR_MALFORMED:
        return "malformed_frame";
    case GS_PROTO_ERR_UNKNOWN:
        return "unknown_message";
    case GS_PROTO_ERR_TRUNCATED:
        return "truncated_frame";
    case GS_PROTO_ERR_PEER_CLOSED:
        return "peer_closed";
    case GS_PROTO_ERR_HANDSHAKE:
        return "bad_hello";
    case GS_PROTO_ERR_VERSION:
        return "version_mismatch";
    case GS_PROTO_ERR_ROLE:
        return "role_refused";
    case GS_PROTO_ERR_REJECTED:
        return "rejected_by_peer";
    case GS_PROTO_ERR_TIMEOUT:
        return "timeout";
    case GS_PROTO_ERR_AUTH:
        return "auth_failed";
    case -ENOMEM:
        return "no_memory";
    default:
        return "io_error";
    }
}

static const ProtobufCFieldDescriptor *body_field(Gs__Envelope__BodyCase body)
{
    const ProtobufCFieldDescriptor *field;

    if (body == GS__ENVELOPE__BODY__NOT_SET)
        return NULL;
    field = protobuf_c_message_descriptor_get_field(&gs__envelope__descriptor, (unsigned)body);
    if (field == NULL || !(field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
        return NULL;
    return field;
}

bool gs_proto_body_known(Gs__Envelope__BodyCase body)
{
    return body_field(body) != NULL;
}

const char *gs_proto_body_name(Gs__Envelope__BodyCase body)
{
    const ProtobufCFieldDescriptor *field = body_field(body);

    if (body == GS__ENVELOPE__BODY__NOT_SET)
        return "none";
    return field != NULL ? field->name : "unknown";
}

uint32_t gs_proto_body_minor(Gs__Envelope__BodyCase body)
{
    /* From the envelope's comments in gsched.proto: field numbers and the minor that added
     * them, in ascending order of number. */
    static const struct {
        uint32_t from, to, minor;
    } since[] = {
        {19, 19, 6},    /* AuthProof */
        {29, 29, 5},    /* JobNotice */
        {30, 30, 6},    /* HeartbeatAck */
        {31, 31, 8},    /* JobLimitUpdate */
        {32, 36, 9},    /* datasets: holdings, commands, reports, shard reads */
        {37, 39, 26},   /* PMIx fences and aborts */
        {70, 73, 4},    /* the jobs' key/value store */
        {74, 79, 7},    /* node and job updates, shares */
        {81, 82, 28},   /* a step's input and output acknowledged */
        {83, 83, 29},   /* a step's output sent again */
        {120, 121, 8},  /* reservations */
        {122, 125, 9},  /* datasets, from the CLI and from tasks */
        {134, 137, 10}, /* allocations, a step's input */
        {138, 139, 18}, /* sreport */
        {140, 141, 20}, /* licenses */
        {142, 145, 22}, /* sdiag, scontrol show config */
        {146, 147, 26}, /* scontrol suspend and resume */
        {148, 148, 29}, /* srun reattaching to its step */
    };

    for (size_t i = 0; i < sizeof(since) / sizeof(since[0]); i++) {
        if ((uint32_t)body >= since[i].from && (uint32_t)body <= since[i].to)
            return since[i].minor;
    }
    return 0;
}

/* The body's message pointer, read through the descriptor so it works for every case. */
static const void *body_message(const Gs__Envelope *env)
{
    const ProtobufCFieldDescriptor *field = body_field(env->body_case);

    if (field == NULL)
        return NULL;
    return *(void *const *)((const char *)env + field->offset);
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int gs_proto_encode(const Gs__Envelope *env, struct gs_buf *out)
{
    uint8_t *frame;
    size_t len;
    int rc;

    if (env == NULL || body_message(env) == NULL)
        return -EINVAL;
    len = gs__envelope__get_packed_size(env);
    if (len > UINT32_MAX)
        return -EMSGSIZE;
    rc = gs_buf_reserve(out, GS_PROTO_HEADER_SIZE + len);
    if (rc < 0)
        return rc;
    frame = (uint8_t *)out->data + out->len;
    put_be32(frame, (uint32_t)len);
    gs__envelope__pack(env, frame + GS_PROTO_HEADER_SIZE);
    out->len += GS_PROTO_HEADER_SIZE + len;
    out->data[out->len] = '\0';
    return 0;
}

/* Allocation budget for one unpack: protobuf-c calls these for every piece it builds. */
struct unpack_budget {
    size_t left;
    bool exceeded;
    bool out_of_memory;
};

static void *budget_alloc(void *allocator_data, size_t size)
{
    struct unpack_budget *budget = allocator_data;
    void *p;

    if (size > budget->left) {
        budget->exceeded = true;
        return NULL;
    }
    p = malloc(size > 0 ? size : 1);
    if (p == NULL) {
        budget->out_of_memory = true;
        return NULL;
    }
    budget->left -= size;
    return p;
}

static void budget_free(void *allocator_data, void *pointer)
{
    (void)allocator_data;
    free(pointer);
}

/* The messages field fd of msg holds, and their count in *ret_n (a oneof's: if chosen). */
static const ProtobufCMessage *const *
sub_messages(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *fd, size_t *ret_n)
{
    const char *base = (const char *)msg;

    *ret_n = 0;
    if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
        return NULL;
    if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
        *ret_n = *(const size_t *)(base + fd->quantifier_offset);
        return *(const ProtobufCMessage *const *const *)(base + fd->offset);
    }
    if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
        *(const uint32_t *)(base + fd->quantifier_offset) != fd->id)
        return NULL;
    *ret_n = *(const ProtobufCMessage *const *)(base + fd->offset) != NULL ? 1 : 0;
    return (const ProtobufCMessage *const *)(base + fd->offset);
}

/* Writes id at path[at] (behind a dot unless first); returns where the next one goes. */
static size_t put_id(char *path, size_t size, size_t at, uint32_t id)
{
    int n;

    if (path == NULL || at + 1 >= size)
        return at;
    n = snprintf(path + at, size - at, "%s%u", at > 0 ? "." : "", (unsigned)id);
    return n < 0 ? at : at + (size_t)n < size ? at + (size_t)n : size - 1;
}

/*
 * Whether msg or a message inside it kept an unknown field (numbered 0 only, if zero_only),
 * depth first; the field numbers leading to the first one go to path from path[at].
 */
static bool find_unknown(const ProtobufCMessage *msg, bool zero_only, char *path, size_t size,
                         size_t at)
{
    const ProtobufCMessageDescriptor *desc = msg->descriptor;

    for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
        if (zero_only && msg->unknown_fields[i].tag != 0)
            continue;
        put_id(path, size, at, msg->unknown_fields[i].tag);
        return true;
    }
    for (unsigned f = 0; f < desc->n_fields; f++) {
        size_t n;
        const ProtobufCMessage *const *subs = sub_messages(msg, &desc->fields[f], &n);

        for (size_t k = 0; k < n; k++)
            if (subs[k] != NULL && find_unknown(subs[k], zero_only, path, size,
                                                put_id(path, size, at, desc->fields[f].id)))
                return true;
    }
    return false;
}

/*
 * Whether msg or a message inside it kept an unknown field numbered 0. Protobuf forbids
 * field 0, but protobuf-c 1.4.1 takes it from a tag written in two bytes (81 00) and keeps
 * it as an unknown field, which it then packs as a one-byte tag it refuses to unpack: an
 * envelope accepted here could not be forwarded. Found by tests/fuzz/fuzz_frame.
 */
static bool has_field_zero(const ProtobufCMessage *msg)
{
    return find_unknown(msg, true, NULL, 0, 0);
}

bool gs_proto_unknown_field(const ProtobufCMessage *msg, char *path, size_t size)
{
    bool found = find_unknown(msg, false, path, size, 0);

    if (!found && size > 0) /* the walk wrote the numbers of the messages it went into */
        path[0] = '\0';
    return found;
}

void gs_proto_field_names(const ProtobufCMessageDescriptor *desc, const char *path, bool numbers,
                          char *out, size_t size)
{
    size_t at = 0;

    if (size == 0)
        return;
    out[0] = '\0';
    while (*path != '\0' && at + 1 < size) {
        char *end;
        unsigned long id = strtoul(path, &end, 10);
        const ProtobufCFieldDescriptor *fd =
            desc != NULL && id <= UINT32_MAX
                ? protobuf_c_message_descriptor_get_field(desc, (unsigned)id)
                : NULL;
        int n;

        if (end == path)
            break;
        if (fd != NULL && numbers)
            n = snprintf(out + at, size - at, "%s%s (%lu)", at > 0 ? "." : "", fd->name, id);
        else if (fd != NULL)
            n = snprintf(out + at, size - at, "%s%s", at > 0 ? "." : "", fd->name);
        else
            n = snprintf(out + at, size - at, "%s%lu", at > 0 ? "." : "", id);
        if (n < 0)
            break;
        at = at + (size_t)n < size ? at + (size_t)n : size - 1;
        desc = fd != NULL && fd->type == PROTOBUF_C_TYPE_MESSAGE ? fd->descriptor : NULL;
        path = *end == '.' ? end + 1 : end;
    }
}

int gs_proto_decode(const void *payload, size_t len, Gs__Envelope **ret_env)
{
    struct unpack_budget budget = {0};
    ProtobufCAllocator allocator = {budget_alloc, budget_free, &budget};
    Gs__Envelope *env;

    if (len == 0)
        return GS_PROTO_ERR_EMPTY;
    budget.left = len > (SIZE_MAX - GS_PROTO_UNPACK_SLACK) / GS_PROTO_UNPACK_FACTOR
                      ? SIZE_MAX
                      : len * GS_PROTO_UNPACK_FACTOR + GS_PROTO_UNPACK_SLACK;
    env = gs__envelope__unpack(&allocator, len, payload);
    if (env == NULL)
        return budget.out_of_memory ? -ENOMEM : GS_PROTO_ERR_MALFORMED;
    if (has_field_zero(&env->base)) {
        gs_proto_envelope_free(env);
        return GS_PROTO_ERR_MALFORMED;
    }
    if (body_message(env) == NULL) {
        gs_proto_envelope_free(env);
        return GS_PROTO_ERR_UNKNOWN;
    }
    *ret_env = env;
    return 0;
}

Gs__TaskExit *gs_proto_task_exit_copy(const Gs__TaskExit *ex)
{
    size_t len = gs__task_exit__get_packed_size(ex);
    uint8_t *packed = malloc(len + 1);
    Gs__TaskExit *copy = NULL;

    if (packed != NULL) {
        gs__task_exit__pack(ex, packed);
        copy = gs__task_exit__unpack(NULL, len, packed);
    }
    free(packed);
    return copy;
}

void gs_proto_envelope_free(Gs__Envelope *env)
{
    /* The budget allocator allocates with malloc(), so the default allocator frees. */
    if (env != NULL)
        gs__envelope__free_unpacked(env, NULL);
}

void gs_proto_decoder_init(struct gs_proto_decoder *dec, uint32_t max_frame)
{
    memset(dec, 0, sizeof(*dec));
    dec->max_frame = max_frame > 0 ? max_frame : GS_PROTO_MAX_FRAME_DEFAULT;
}

void gs_proto_decoder_release(struct gs_proto_decoder *dec)
{
    if (dec == NULL)
        return;
    free(dec->payload);
    gs_proto_decoder_init(dec, dec->max_frame);
}

static size_t take(const uint8_t **data, size_t *len, void *dst, size_t want)
{
    size_t n = *len < want ? *len : want;

    if (n == 0)
        return 0; /* dst may be NULL: no payload buffer yet */
    memcpy(dst, *data, n);
    *data += n;
    *len -= n;
    return n;
}

/* Collects header bytes; returns 1 once the length is known and acceptable. */
static int take_header(struct gs_proto_decoder *dec, const uint8_t **data, size_t *len)
{
    dec->header_len += (uint8_t)take(data, len, dec->header + dec->header_len,
                                     GS_PROTO_HEADER_SIZE - dec->header_len);
    if (dec->header_len < GS_PROTO_HEADER_SIZE)
        return 0;
    dec->frame_len = get_be32(dec->header);
    if (dec->frame_len == 0)
        return GS_PROTO_ERR_EMPTY;
    if (dec->frame_len > dec->max_frame)
        return GS_PROTO_ERR_OVERSIZED;
    return 1;
}

/* Grows the payload buffer to hold need bytes, never beyond the frame's length. */
static int grow_payload(struct gs_proto_decoder *dec, size_t need)
{
    size_t cap;
    uint8_t *p;

    if (need <= dec->payload_cap)
        return 0;
    cap = dec->payload_cap > 0 ? dec->payload_cap * 2 : PAYLOAD_MIN_CAP;
    if (cap < need)
        cap = need;
    if (cap > dec->frame_len)
        cap = dec->frame_len;
    p = realloc(dec->payload, cap);
    if (p == NULL)
        return -ENOMEM;
    dec->payload = p;
    dec->payload_cap = cap;
    return 0;
}

/* Readies the decoder for the next frame's header. */
static void end_frame(struct gs_proto_decoder *dec)
{
    dec->header_len = 0;
    dec->payload_len = 0;
    if (dec->payload_cap > PAYLOAD_KEEP_CAP) {
        free(dec->payload);
        dec->payload = NULL;
        dec->payload_cap = 0;
    }
}

/*
 * Gathers payload bytes. Returns 1 with the whole payload in *ret_payload (in the input when
 * it arrived in one piece and copy is false, else in the decoder's buffer), 0 when more is
 * needed, or -ENOMEM.
 */
static int take_payload(struct gs_proto_decoder *dec, const uint8_t **data, size_t *len, bool copy,
                        const uint8_t **ret_payload)
{
    size_t want = dec->frame_len - dec->payload_len;
    int rc;

    if (!copy && dec->payload_len == 0 && *len >= want) {
        *ret_payload = *data;
        *data += want;
        *len -= want;
        return 1;
    }
    if (*len == 0)
        return 0; /* the input ended with the header: no buffer yet (NULL + 0 is UB) */
    rc = grow_payload(dec, dec->payload_len + (*len < want ? *len : want));
    if (rc < 0)
        return rc;
    dec->payload_len += take(data, len, dec->payload + dec->payload_len, want);
    if (dec->payload_len < dec->frame_len)
        return 0;
    *ret_payload = dec->payload;
    return 1;
}

int gs_proto_decoder_next(struct gs_proto_decoder *dec, const uint8_t **data, size_t *len,
                          Gs__Envelope **ret_env)
{
    const uint8_t *payload;
    size_t plen;
    bool sealed;
    int rc;

    if (dec->error != 0)
        return dec->error;
    if (dec->header_len < GS_PROTO_HEADER_SIZE) {
        rc = take_header(dec, data, len);
        if (rc <= 0)
            goto out;
    }
    /* A sealed payload is decrypted in place, so in the decoder's buffer, never the input. */
    sealed = dec->seal != NULL && dec->seal->receiving;
    rc = take_payload(dec, data, len, sealed, &payload);
    if (rc <= 0)
        goto out;
    plen = dec->frame_len;
    if (sealed)
        rc = gs_proto_seal_open(dec->seal, dec->payload, plen, &plen);
    if (rc >= 0)
        rc = gs_proto_decode(payload, plen, ret_env);
    end_frame(dec);
    if (rc == 0)
        rc = 1;
out:
    if (rc < 0)
        dec->error = rc;
    return rc;
}

int gs_proto_decoder_finish(const struct gs_proto_decoder *dec)
{
    if (dec->error != 0)
        return dec->error;
    return gs_proto_decoder_buffered(dec) > 0 ? GS_PROTO_ERR_TRUNCATED : 0;
}

size_t gs_proto_decoder_buffered(const struct gs_proto_decoder *dec)
{
    return dec->header_len + dec->payload_len;
}

int gs_proto_relay_pack(Gs__CliRelay *relay, const Gs__Envelope *inner, struct gs_buf *packed)
{
    int rc;

    relay->close = inner == NULL;
    if (inner == NULL)
        return 0;
    rc = gs_proto_encode(inner, packed);
    if (rc < 0)
        return rc;
    relay->frame.data = (uint8_t *)packed->data + GS_PROTO_HEADER_SIZE;
    relay->frame.len = packed->len - GS_PROTO_HEADER_SIZE;
    return 0;
}
