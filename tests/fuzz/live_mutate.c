/*
 * live_mutate.c: live_fuzz's randomness and its message mutator (live.h).
 *
 * The mutator knows no message by name: it walks protobuf-c's descriptors, so every body
 * case of gsched.proto, present and future, is mutated the same way. A message is an owned
 * tree (malloc'd, as protobuf-c's unpacker makes them, so protobuf_c_message_free_unpacked
 * frees it); a mutation picks a field anywhere in the tree and gives it an interesting value:
 * boundaries of its width, negative numbers in unsigned fields, out-of-range enums, long,
 * empty, format-string and path-like strings, a submessage removed or added, a repeated
 * field emptied, duplicated or grown to thousands of elements, another oneof member. Values
 * the daemons handed out (live.h's lf_dict) come back often, so that mutated messages name
 * real jobs, requests and nodes. Byte-level damage to a packed payload comes last, with the
 * frame header fixed up to the new length.
 *
 * This is test code over protobuf-c's reflection on purpose: it is the one place where the
 * generated structs are packed and freed other than through gs_proto_ functions (the frames
 * it makes are meant to be ones gs_proto_encode would refuse).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/live.h"
#include "tests/common/pb_field_size.h"

#define MAX_DEPTH 8
#define SMALL_REPEAT 4

/* ---- randomness ---- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void lf_rng_seed(struct lf_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t lf_rand(struct lf_rng *r)
{
    uint64_t result = rotl(r->s[1] * 5, 7) * 9;
    uint64_t t = r->s[1] << 17;

    r->s[2] ^= r->s[0];
    r->s[3] ^= r->s[1];
    r->s[1] ^= r->s[2];
    r->s[0] ^= r->s[3];
    r->s[2] ^= t;
    r->s[3] = rotl(r->s[3], 45);
    return result;
}

uint64_t lf_below(struct lf_rng *r, uint64_t n)
{
    return n == 0 ? 0 : lf_rand(r) % n;
}

bool lf_chance(struct lf_rng *r, unsigned percent)
{
    return lf_below(r, 100) < percent;
}

void lf_dict_num(struct lf_dict *d, uint64_t v)
{
    if (v == 0)
        return;
    for (unsigned i = 0; i < d->nnums; i++) {
        if (d->nums[i] == v)
            return;
    }
    d->nums[d->next_num] = v;
    d->next_num = (d->next_num + 1) % LF_DICT_NUMS;
    if (d->nnums < LF_DICT_NUMS)
        d->nnums++;
}

void lf_dict_str(struct lf_dict *d, const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) >= sizeof(d->strs[0]))
        return;
    for (unsigned i = 0; i < d->nstrs; i++) {
        if (strcmp(d->strs[i], s) == 0)
            return;
    }
    snprintf(d->strs[d->next_str], sizeof(d->strs[0]), "%s", s);
    d->next_str = (d->next_str + 1) % LF_DICT_STRS;
    if (d->nstrs < LF_DICT_STRS)
        d->nstrs++;
}

/* ---- owned messages ---- */

void *lf_new(const ProtobufCMessageDescriptor *desc)
{
    ProtobufCMessage *m = malloc(desc->sizeof_message);

    if (m == NULL)
        abort(); /* a test tool: out of memory ends the run */
    desc->message_init(m);
    return m;
}

void lf_free(void *msg)
{
    if (msg != NULL)
        protobuf_c_message_free_unpacked(msg, NULL);
}

char *lf_strdup(const char *s)
{
    char *p = strdup(s != NULL ? s : "");

    if (p == NULL)
        abort();
    return p;
}

void *lf_copy(const void *msg)
{
    const ProtobufCMessage *m = msg;
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(len > 0 ? len : 1);
    void *copy;

    if (buf == NULL)
        abort();
    protobuf_c_message_pack(m, buf);
    copy = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
    free(buf);
    return copy;
}

int lf_push(void *arr, size_t *n, size_t size, const void *elt)
{
    char **a = arr;
    char *grown = realloc(*a, (*n + 1) * size);

    if (grown == NULL)
        return -ENOMEM;
    memcpy(grown + *n * size, elt, size);
    *a = grown;
    (*n)++;
    return 0;
}

void lf_set_bytes(ProtobufCBinaryData *b, const void *data, size_t len)
{
    free(b->data);
    b->data = malloc(len > 0 ? len : 1);
    if (b->data == NULL)
        abort();
    if (len > 0)
        memcpy(b->data, data, len);
    b->len = len;
}

static const ProtobufCFieldDescriptor *envelope_field(Gs__Envelope__BodyCase body_case)
{
    return protobuf_c_message_descriptor_get_field(&gs__envelope__descriptor, (unsigned)body_case);
}

Gs__Envelope *lf_envelope(Gs__Envelope__BodyCase body_case, void *body, uint64_t request_id)
{
    Gs__Envelope *env = lf_new(&gs__envelope__descriptor);
    const ProtobufCFieldDescriptor *f = envelope_field(body_case);

    env->request_id = request_id;
    if (f == NULL || body == NULL) {
        lf_free(body);
        return env;
    }
    env->body_case = body_case;
    *(void **)((char *)env + f->offset) = body;
    return env;
}

/* ---- values ---- */

static const uint64_t boundaries[] = {0,           1,
                                      2,           3,
                                      7,           8,
                                      15,          16,
                                      31,          32,
                                      63,          64,
                                      127,         128,
                                      255,         256,
                                      1023,        1024,
                                      4095,        4096,
                                      65535,       65536,
                                      0x7fffffffu, 0x80000000u,
                                      0xfffffffeu, 0xffffffffu,
                                      1ull << 32,  1ull << 40,
                                      1ull << 53,  0x7fffffffffffffffull,
                                      1ull << 63,  UINT64_MAX - 1,
                                      UINT64_MAX};

static uint64_t number(struct lf_rng *r, const struct lf_dict *d)
{
    switch (lf_below(r, 9)) {
    case 0:
        return lf_below(r, 17);
    case 1:
    case 2:
        if (d != NULL && d->nnums > 0)
            return d->nums[lf_below(r, d->nnums)] + lf_below(r, 3) - 1;
        return lf_below(r, 64);
    case 3:
        return boundaries[lf_below(r, sizeof(boundaries) / sizeof(boundaries[0]))];
    case 4:
        return lf_rand(r);
    case 5:
        return lf_below(r, 1000);
    case 6:
        return (1ull << lf_below(r, 64)) + lf_below(r, 3) - 1;
    case 7:
        return (uint64_t) - (int64_t)(1 + lf_below(r, 16));
    default:
        return 1700000000000ull + lf_below(r, 1ull << 40); /* wall-clock milliseconds */
    }
}

static int32_t enum_value(struct lf_rng *r, const ProtobufCEnumDescriptor *e)
{
    static const int32_t odd[] = {-1, -2, INT32_MIN, INT32_MAX, 1000, 128, 255, 65536};

    if (e != NULL && e->n_values > 0 && lf_chance(r, 60))
        return e->values[lf_below(r, e->n_values)].value;
    if (e != NULL && lf_chance(r, 40))
        return (int32_t)(e->n_values + lf_below(r, 3));
    return odd[lf_below(r, sizeof(odd) / sizeof(odd[0]))];
}

static double real_value(struct lf_rng *r)
{
    static const double odd[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e308, -1e308, 1e-308, 100.0, 1e9};

    switch (lf_below(r, 4)) {
    case 0:
        return INFINITY * (lf_chance(r, 50) ? 1 : -1);
    case 1:
        return NAN;
    case 2:
        return odd[lf_below(r, sizeof(odd) / sizeof(odd[0]))];
    default:
        return (double)(int64_t)lf_rand(r) / (double)(1ull << lf_below(r, 64));
    }
}

static const char *const tricky[] = {
    "%s%s%s%n",
    "%x%j%t%n%%%A%a%N%u%J",
    "../../../../etc/passwd",
    "/",
    ".",
    "..",
    "-",
    "-rf",
    "a b",
    "\n",
    "\r\n",
    "\t",
    "\x1b[2J",
    "\xff\xfe\xfd",
    "\xc3\x28",
    "0",
    "-1",
    "18446744073709551615",
    "99999999999999999999999",
    "node[1-99999]",
    "fz[0-3]",
    "n1,n2,n3",
    "ALL",
    "h100",
    "nvlink",
    "KEY=VALUE",
    "=",
    "$(id)",
    "`id`",
    ";",
    "|",
    "\\",
    "\"",
    "'",
    "{}",
    "[]",
    "GSCHED_SOCKET",
    "PATH",
    "LD_PRELOAD",
    "SLURM_JOB_ID",
    "CUDA_VISIBLE_DEVICES",
    "main",
    "gpu",
    "default",
    "1h",
    "0:0",
    "infinite",
    "a=b=c",
    "%0999999999d",
    "%.99999f",
    "node%",
    "[",
    "]",
    "fz0",
    "fz1",
    "live0",
    "gschedd",
    "root",
    "nobody",
    "0000:17:00.0",
    "GPU-00000000-0000-0000-0000-000000000000",
    "mlx5_0",
};

static char *filled_string(size_t len, char c)
{
    char *s = malloc(len + 1);

    if (s == NULL)
        abort();
    memset(s, c, len);
    s[len] = '\0';
    return s;
}

static char *random_chars(struct lf_rng *r, size_t len, bool printable)
{
    char *s = malloc(len + 1);

    if (s == NULL)
        abort();
    for (size_t i = 0; i < len; i++)
        s[i] = printable ? (char)(' ' + lf_below(r, 95)) : (char)(1 + lf_below(r, 255));
    s[len] = '\0';
    return s;
}

static char *string_value(struct lf_rng *r, const struct lf_dict *d)
{
    static const size_t lengths[] = {63, 64, 65, 107, 108, 127, 128, 255, 256, 1023, 1024, 4096};

    switch (lf_below(r, 10)) {
    case 0:
        return lf_strdup("");
    case 1:
    case 2:
        if (d != NULL && d->nstrs > 0)
            return lf_strdup(d->strs[lf_below(r, d->nstrs)]);
        return lf_strdup("fz0");
    case 3:
    case 4:
        return lf_strdup(tricky[lf_below(r, sizeof(tricky) / sizeof(tricky[0]))]);
    case 5:
        return filled_string(lengths[lf_below(r, sizeof(lengths) / sizeof(lengths[0]))], 'a');
    case 6:
        return lf_chance(r, 10) ? filled_string(65536 + lf_below(r, 200000), 'B')
                                : filled_string(lf_below(r, 600), 'x');
    case 7:
        return random_chars(r, 1 + lf_below(r, 40), false);
    default:
        return random_chars(r, 1 + lf_below(r, 16), true);
    }
}

/* A short string, for elements of the long arrays (thousands of them). */
static char *short_string(struct lf_rng *r, const struct lf_dict *d)
{
    if (d != NULL && d->nstrs > 0 && lf_chance(r, 30))
        return lf_strdup(d->strs[lf_below(r, d->nstrs)]);
    return random_chars(r, lf_below(r, 9), true);
}

static void bytes_value(struct lf_rng *r, ProtobufCBinaryData *b, bool small)
{
    size_t len;
    uint8_t *p;

    switch (small ? 3 : lf_below(r, 4)) {
    case 0:
        len = 0;
        break;
    case 1:
        len = lf_chance(r, 20) ? 65536 + lf_below(r, 300000) : 4096 + lf_below(r, 2);
        break;
    default:
        len = lf_below(r, 64);
        break;
    }
    free(b->data);
    p = malloc(len > 0 ? len : 1);
    if (p == NULL)
        abort();
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)lf_rand(r);
    b->data = p;
    b->len = len;
}

/* ---- fields ---- */

static void *member(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return (char *)m + f->offset;
}

static void *quantifier(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return (char *)m + f->quantifier_offset;
}

static bool is_oneof(const ProtobufCFieldDescriptor *f)
{
    return (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0;
}

static bool oneof_selected(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return *(uint32_t *)quantifier(m, f) == f->id;
}

static bool string_owned(const ProtobufCFieldDescriptor *f, const char *s)
{
    return s != NULL && s != protobuf_c_empty_string && s != f->default_value;
}

/* Frees what the value at p owns (a string, bytes or a message) and clears it. */
static void drop_value(const ProtobufCFieldDescriptor *f, void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING:
        if (string_owned(f, *(char **)p))
            free(*(char **)p);
        *(char **)p = (char *)protobuf_c_empty_string;
        break;
    case PROTOBUF_C_TYPE_BYTES:
        free(((ProtobufCBinaryData *)p)->data);
        *(ProtobufCBinaryData *)p = (ProtobufCBinaryData){0, NULL};
        break;
    case PROTOBUF_C_TYPE_MESSAGE:
        lf_free(*(ProtobufCMessage **)p);
        *(ProtobufCMessage **)p = NULL;
        break;
    default:
        memset(p, 0, pb_field_elem_size(f->type));
        break;
    }
}

static ProtobufCMessage *new_filled(struct lf_rng *r, const struct lf_dict *d,
                                    const ProtobufCMessageDescriptor *desc, int depth)
{
    ProtobufCMessage *m = lf_new(desc);

    if (depth > 0)
        lf_fill(r, d, m, depth);
    return m;
}

/* Gives the value at p (a field of type f->type, not repeated) an interesting value. */
static void set_value(struct lf_rng *r, const struct lf_dict *d, const ProtobufCFieldDescriptor *f,
                      void *p, int depth)
{
    uint64_t v = number(r, d);

    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        *(uint32_t *)p = (uint32_t)v;
        break;
    case PROTOBUF_C_TYPE_ENUM:
        *(int32_t *)p = enum_value(r, f->descriptor);
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        *(float *)p = (float)real_value(r);
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        *(double *)p = real_value(r);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        *(protobuf_c_boolean *)p = lf_chance(r, 50);
        break;
    case PROTOBUF_C_TYPE_STRING:
        drop_value(f, p);
        *(char **)p = depth > 0 ? string_value(r, d) : short_string(r, d);
        break;
    case PROTOBUF_C_TYPE_BYTES:
        bytes_value(r, p, depth <= 0);
        break;
    case PROTOBUF_C_TYPE_MESSAGE:
        drop_value(f, p);
        *(ProtobufCMessage **)p = new_filled(r, d, f->descriptor, depth);
        break;
    default:
        *(uint64_t *)p = v;
        break;
    }
}

/* Appends one element to repeated field f: a new value, or a copy of an element. */
static void append(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *m,
                   const ProtobufCFieldDescriptor *f, int depth)
{
    size_t *n = quantifier(m, f);
    char **arr = member(m, f);
    size_t size = pb_field_elem_size(f->type);
    uint8_t elt[32] = {0};

    if (f->type == PROTOBUF_C_TYPE_MESSAGE && *n > 0 && lf_chance(r, 40)) {
        void *copy = lf_copy(((ProtobufCMessage **)*arr)[lf_below(r, *n)]);

        if (copy == NULL)
            return;
        memcpy(elt, &copy, sizeof(copy));
    } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        ProtobufCMessage *sub = new_filled(r, d, f->descriptor, depth);

        memcpy(elt, &sub, sizeof(sub));
    } else {
        if (f->type == PROTOBUF_C_TYPE_STRING)
            *(char **)elt = (char *)protobuf_c_empty_string;
        set_value(r, d, f, elt, depth);
    }
    if (lf_push(arr, n, size, elt) < 0)
        abort();
}

static void remove_at(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, size_t i)
{
    size_t *n = quantifier(m, f);
    char *arr = *(char **)member(m, f);
    size_t size = pb_field_elem_size(f->type);

    drop_value(f, arr + i * size);
    memmove(arr + i * size, arr + (i + 1) * size, (*n - i - 1) * size);
    (*n)--;
}

static void mutate_one(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *m, int depth);

static void mutate_repeated(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *m,
                            const ProtobufCFieldDescriptor *f, int depth)
{
    size_t *n = quantifier(m, f);
    char *arr = *(char **)member(m, f);
    size_t size = pb_field_elem_size(f->type), count;

    switch (lf_below(r, 8)) {
    case 0:
    case 1:
        append(r, d, m, f, 2);
        break;
    case 2:
        if (*n > 0)
            remove_at(m, f, lf_below(r, *n));
        break;
    case 3:
        while (*n > 0)
            remove_at(m, f, *n - 1);
        break;
    case 4:
    case 5:
        if (*n == 0) {
            append(r, d, m, f, 2);
        } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            mutate_one(r, d, ((ProtobufCMessage **)arr)[lf_below(r, *n)], depth + 1);
        } else {
            set_value(r, d, f, arr + lf_below(r, *n) * size, 1);
        }
        break;
    case 6:
        count = 2 + lf_below(r, SMALL_REPEAT);
        while (count-- > 0)
            append(r, d, m, f, 1);
        break;
    default: /* many: thousands of numbers, hundreds of messages */
        count =
            f->type == PROTOBUF_C_TYPE_MESSAGE ? 50 + lf_below(r, 300) : 100 + lf_below(r, 3000);
        while (count-- > 0)
            append(r, d, m, f, 0);
        break;
    }
}

/* Selects oneof member f instead of the one set (if any). */
static void switch_oneof(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *m,
                         const ProtobufCFieldDescriptor *f)
{
    uint32_t *which = quantifier(m, f);
    const ProtobufCFieldDescriptor *old =
        protobuf_c_message_descriptor_get_field(m->descriptor, *which);

    if (old != NULL && is_oneof(old) && old->quantifier_offset == f->quantifier_offset)
        drop_value(old, member(m, old));
    if (f->type == PROTOBUF_C_TYPE_STRING)
        *(char **)member(m, f) = (char *)protobuf_c_empty_string;
    if (f->type == PROTOBUF_C_TYPE_BYTES)
        *(ProtobufCBinaryData *)member(m, f) = (ProtobufCBinaryData){0, NULL};
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        *(ProtobufCMessage **)member(m, f) = NULL;
    *which = f->id;
    set_value(r, d, f, member(m, f), 3);
}

/* A field of m to mutate: a oneof's set member far more often than switching members. */
static const ProtobufCFieldDescriptor *pick_field(struct lf_rng *r, ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *desc = m->descriptor;
    const ProtobufCFieldDescriptor *f = &desc->fields[lf_below(r, desc->n_fields)];
    const ProtobufCFieldDescriptor *set;

    if (!is_oneof(f) || oneof_selected(m, f) || lf_chance(r, 15))
        return f;
    set = protobuf_c_message_descriptor_get_field(desc, *(uint32_t *)quantifier(m, f));
    return set != NULL && is_oneof(set) && set->quantifier_offset == f->quantifier_offset ? set : f;
}

static void mutate_one(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *m, int depth)
{
    const ProtobufCFieldDescriptor *f;
    ProtobufCMessage **sub;

    if (m->descriptor->n_fields == 0)
        return;
    f = pick_field(r, m);
    if (is_oneof(f) && !oneof_selected(m, f)) {
        switch_oneof(r, d, m, f);
        return;
    }
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        mutate_repeated(r, d, m, f, depth);
        return;
    }
    if (f->type != PROTOBUF_C_TYPE_MESSAGE) {
        set_value(r, d, f, member(m, f), 2);
        return;
    }
    sub = member(m, f);
    /* The envelope's body itself is rarely removed or replaced by an empty one: that only
     * ends the connection (unknown_message), which a switch of body case also tests. */
    if (*sub != NULL && depth < MAX_DEPTH && lf_chance(r, depth == 0 && is_oneof(f) ? 97 : 75)) {
        mutate_one(r, d, *sub, depth + 1);
    } else if (lf_chance(r, 40)) {
        drop_value(f, sub); /* the submessage absent */
    } else {
        drop_value(f, sub);
        *sub = new_filled(r, d, f->descriptor, lf_chance(r, 50) ? 0 : 2);
    }
}

void lf_mutate(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *msg)
{
    unsigned n = 1 + (unsigned)lf_below(r, 4);

    while (n-- > 0)
        mutate_one(r, d, msg, 0);
}

void lf_fill(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *msg, int depth)
{
    const ProtobufCMessageDescriptor *desc = msg->descriptor;

    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];

        if (is_oneof(f)) {
            if (*(uint32_t *)quantifier(msg, f) == 0 && lf_chance(r, 40))
                switch_oneof(r, d, msg, f);
            continue;
        }
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            for (uint64_t k = lf_chance(r, 50) ? lf_below(r, SMALL_REPEAT) : 0; k > 0; k--)
                append(r, d, msg, f, depth - 1);
            continue;
        }
        if (f->type == PROTOBUF_C_TYPE_MESSAGE && (depth <= 1 || !lf_chance(r, 50)))
            continue;
        if (lf_chance(r, 60))
            set_value(r, d, f, member(msg, f), depth - 1);
    }
}

Gs__Envelope *lf_random_envelope(struct lf_rng *r, const struct lf_dict *d)
{
    const ProtobufCMessageDescriptor *desc = &gs__envelope__descriptor;
    Gs__Envelope *env = lf_new(desc);
    const ProtobufCFieldDescriptor *f;

    do
        f = &desc->fields[lf_below(r, desc->n_fields)];
    while (!is_oneof(f));
    switch_oneof(r, d, &env->base, f);
    env->request_id = lf_chance(r, 30) ? 0 : number(r, d);
    return env;
}

/* ---- frames ---- */

static void put_length(struct gs_buf *frame, size_t at, uint32_t len)
{
    frame->data[at] = (char)(len >> 24);
    frame->data[at + 1] = (char)(len >> 16);
    frame->data[at + 2] = (char)(len >> 8);
    frame->data[at + 3] = (char)len;
}

void lf_pack_frame(const Gs__Envelope *env, struct gs_buf *out)
{
    size_t len = protobuf_c_message_get_packed_size(&env->base);
    size_t at = out->len;

    if (gs_buf_reserve(out, GS_PROTO_HEADER_SIZE + len) < 0)
        abort();
    put_length(out, at, (uint32_t)len);
    protobuf_c_message_pack(&env->base, (uint8_t *)out->data + at + GS_PROTO_HEADER_SIZE);
    out->len = at + GS_PROTO_HEADER_SIZE + len;
    out->data[out->len] = '\0';
}

/* Inserts n bytes (at most 64: random, or a copy of the payload's own) at payload offset pos. */
static void insert_bytes(struct lf_rng *r, struct gs_buf *frame, size_t pos, size_t n, bool copy)
{
    size_t at = GS_PROTO_HEADER_SIZE + pos, plen = frame->len - GS_PROTO_HEADER_SIZE;
    char chunk[64];
    size_t from;

    if (n > sizeof(chunk))
        n = sizeof(chunk);
    from = plen >= n ? lf_below(r, plen - n + 1) : 0;
    for (size_t i = 0; i < n; i++)
        chunk[i] =
            copy && plen >= n ? frame->data[GS_PROTO_HEADER_SIZE + from + i] : (char)lf_rand(r);
    if (gs_buf_reserve(frame, n) < 0)
        abort();
    memmove(frame->data + at + n, frame->data + at, frame->len - at);
    memcpy(frame->data + at, chunk, n);
    frame->len += n;
    frame->data[frame->len] = '\0';
}

static void delete_bytes(struct gs_buf *frame, size_t pos, size_t n)
{
    size_t at = GS_PROTO_HEADER_SIZE + pos;

    if (at + n > frame->len)
        n = frame->len - at;
    memmove(frame->data + at, frame->data + at + n, frame->len - at - n);
    frame->len -= n;
    frame->data[frame->len] = '\0';
}

static void damage_once(struct lf_rng *r, struct gs_buf *frame)
{
    static const uint8_t odd[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x10, 0x12, 0x1a, 0x22};
    size_t plen = frame->len - GS_PROTO_HEADER_SIZE;
    size_t pos = lf_below(r, plen);
    char *payload = frame->data + GS_PROTO_HEADER_SIZE;

    switch (lf_below(r, 8)) {
    case 0:
    case 1:
        if (plen > 0)
            payload[pos] ^= (char)(1u << lf_below(r, 8));
        break;
    case 2:
        if (plen > 0)
            payload[pos] = (char)odd[lf_below(r, sizeof(odd))];
        break;
    case 3:
        insert_bytes(r, frame, pos, 1 + lf_below(r, 8), false);
        break;
    case 4:
        if (plen > 1)
            delete_bytes(frame, pos, 1 + lf_below(r, 8));
        break;
    case 5:
        if (plen > 1)
            gs_buf_truncate(frame, GS_PROTO_HEADER_SIZE + 1 + lf_below(r, plen - 1));
        break;
    case 6:
        insert_bytes(r, frame, pos, 1 + lf_below(r, plen < 64 ? plen + 1 : 64), true);
        break;
    default: /* an over-long varint where a field's value starts */
        if (plen > 2) {
            insert_bytes(r, frame, pos, 10, false);
            memset(frame->data + GS_PROTO_HEADER_SIZE + pos, 0xff, 9);
            frame->data[GS_PROTO_HEADER_SIZE + pos + 9] = 0x01;
        }
        break;
    }
}

void lf_mutate_payload(struct lf_rng *r, struct gs_buf *frame)
{
    unsigned n = 1 + (unsigned)lf_below(r, 3);

    if (frame->len < GS_PROTO_HEADER_SIZE)
        return;
    while (n-- > 0)
        damage_once(r, frame);
    put_length(frame, 0, (uint32_t)(frame->len - GS_PROTO_HEADER_SIZE));
}
