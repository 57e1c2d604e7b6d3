/*
 * toml.c: the TOML document model behind toml.h: the arena every document allocates from,
 * tables (entries in document order plus an open-addressing hash index once they hold more
 * than a few keys), arrays, and the public read-only getters.
 *
 * Parsing lives in toml_parse.c and toml_scalar.c; see toml_impl.h for how the pieces fit.
 * A document is immutable once gs_toml_parse() returns it, so the getters take const
 * pointers and are safe from any number of threads.
 */
#include "common/toml_impl.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

/* Small allocations share chunks of this size; bigger ones get a chunk of their own. */
#define CHUNK_SIZE (64 * 1024)
/* Tables up to this many entries are searched linearly, without an index. */
#define LINEAR_MAX 8

struct toml_chunk {
    struct toml_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

static struct toml_chunk *chunk_new(size_t cap)
{
    struct toml_chunk *c;

    if (cap > SIZE_MAX - sizeof(*c))
        return NULL;
    c = malloc(sizeof(*c) + cap);
    if (c == NULL)
        return NULL;
    c->next = NULL;
    c->used = 0;
    c->cap = cap;
    return c;
}

void *toml_alloc(struct gs_toml_doc *doc, size_t size)
{
    const size_t align = alignof(max_align_t);
    struct toml_chunk *c = doc->chunks;
    void *p;

    if (size > SIZE_MAX - align)
        return NULL;
    size = (size + align - 1) / align * align;
    if (size > CHUNK_SIZE / 4) {
        /* Own chunk, linked behind the head so the head keeps serving small requests. */
        struct toml_chunk *big = chunk_new(size);

        if (big == NULL)
            return NULL;
        big->used = size;
        if (c == NULL) {
            doc->chunks = big;
        } else {
            big->next = c->next;
            c->next = big;
        }
        return big->data;
    }
    if (c == NULL || c->cap - c->used < size) {
        c = chunk_new(CHUNK_SIZE);
        if (c == NULL)
            return NULL;
        c->next = doc->chunks;
        doc->chunks = c;
    }
    p = (char *)c->data + c->used;
    c->used += size;
    return p;
}

const char *toml_strdup(struct gs_toml_doc *doc, const char *s, size_t len)
{
    char *copy;

    if (len == SIZE_MAX)
        return NULL;
    copy = toml_alloc(doc, len + 1);
    if (copy == NULL)
        return NULL;
    if (len > 0)
        memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

/*
 * Makes room for one more element of a vector: returns items itself when there is room, else
 * a copy in a block twice the size (updating *cap), or NULL when out of memory.
 */
static void *vec_grow(struct gs_toml_doc *doc, void *items, size_t count, size_t *cap,
                      size_t elem_size)
{
    size_t new_cap;
    void *grown;

    if (count < *cap)
        return items;
    new_cap = *cap == 0 ? 4 : *cap * 2;
    if (new_cap < *cap || new_cap > SIZE_MAX / elem_size)
        return NULL;
    grown = toml_alloc(doc, new_cap * elem_size);
    if (grown == NULL)
        return NULL;
    if (count > 0)
        memcpy(grown, items, count * elem_size);
    *cap = new_cap;
    return grown;
}

/* FNV-1a, 32 bits. */
static uint32_t key_hash(const char *key, size_t len)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 16777619u;
    }
    return h;
}

static bool entry_is(const struct toml_entry *e, const char *key, size_t len)
{
    return e->key_len == len && memcmp(e->key, key, len) == 0;
}

struct toml_entry *toml_table_find(const struct gs_toml_value *table, const char *key, size_t len)
{
    const struct toml_table *t = &table->u.table;
    size_t mask, i;
    uint32_t h;

    if (t->slots == NULL) {
        for (i = 0; i < t->count; i++) {
            if (entry_is(&t->entries[i], key, len))
                return &t->entries[i];
        }
        return NULL;
    }
    h = key_hash(key, len);
    mask = t->nslots - 1;
    for (i = h & mask; t->slots[i] != 0; i = (i + 1) & mask) {
        struct toml_entry *e = &t->entries[t->slots[i] - 1];

        if (e->hash == h && entry_is(e, key, len))
            return e;
    }
    return NULL;
}

static void index_put(struct toml_table *t, size_t entry)
{
    size_t mask = t->nslots - 1;
    size_t i = t->entries[entry].hash & mask;

    while (t->slots[i] != 0)
        i = (i + 1) & mask;
    t->slots[i] = entry + 1;
}

/* Rebuilds the index with room for at least twice the entries (after the next insert). */
static int index_rebuild(struct gs_toml_doc *doc, struct toml_table *t)
{
    size_t nslots = 16;
    size_t *slots;

    while (nslots / 2 < t->count + 1) {
        if (nslots > SIZE_MAX / 2 / sizeof(*slots))
            return -ENOMEM;
        nslots *= 2;
    }
    slots = toml_alloc(doc, nslots * sizeof(*slots));
    if (slots == NULL)
        return -ENOMEM;
    memset(slots, 0, nslots * sizeof(*slots));
    t->slots = slots;
    t->nslots = nslots;
    for (size_t i = 0; i < t->count; i++)
        index_put(t, i);
    return 0;
}

int toml_table_add(struct gs_toml_doc *doc, struct gs_toml_value *table, const char *key,
                   size_t key_len, int key_line, int key_col, struct gs_toml_value *value)
{
    struct toml_table *t = &table->u.table;
    struct toml_entry *e;
    struct toml_entry *entries;
    int rc;

    entries = vec_grow(doc, t->entries, t->count, &t->cap, sizeof(*t->entries));
    if (entries == NULL)
        return -ENOMEM;
    t->entries = entries;
    if (t->count >= LINEAR_MAX && (t->slots == NULL || (t->count + 1) * 2 > t->nslots)) {
        rc = index_rebuild(doc, t);
        if (rc < 0)
            return rc;
    }
    e = &t->entries[t->count];
    e->key = key;
    e->key_len = key_len;
    e->hash = key_hash(key, key_len);
    e->key_line = key_line;
    e->key_col = key_col;
    e->value = value;
    t->count++;
    if (t->slots != NULL)
        index_put(t, t->count - 1);
    return 0;
}

int toml_array_push(struct gs_toml_doc *doc, struct gs_toml_value *array,
                    struct gs_toml_value *item)
{
    struct toml_array *a = &array->u.array;
    struct gs_toml_value **items;

    items = vec_grow(doc, a->items, a->count, &a->cap, sizeof(*a->items));
    if (items == NULL)
        return -ENOMEM;
    a->items = items;
    a->items[a->count++] = item;
    return 0;
}

void gs_toml_free(struct gs_toml_doc *doc)
{
    struct toml_chunk *c, *next;

    if (doc == NULL)
        return;
    for (c = doc->chunks; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    free(doc);
}

const struct gs_toml_value *gs_toml_root(const struct gs_toml_doc *doc)
{
    return doc == NULL ? NULL : doc->root;
}

enum gs_toml_type gs_toml_type(const struct gs_toml_value *v)
{
    return v == NULL ? GS_TOML_NONE : v->type;
}

const char *gs_toml_type_name(enum gs_toml_type type)
{
    switch (type) {
    case GS_TOML_NONE:
        return "none";
    case GS_TOML_TABLE:
        return "table";
    case GS_TOML_ARRAY:
        return "array";
    case GS_TOML_STRING:
        return "string";
    case GS_TOML_INTEGER:
        return "integer";
    case GS_TOML_FLOAT:
        return "float";
    case GS_TOML_BOOL:
        return "boolean";
    case GS_TOML_DATETIME:
        return "offset date-time";
    case GS_TOML_DATETIME_LOCAL:
        return "local date-time";
    case GS_TOML_DATE_LOCAL:
        return "local date";
    case GS_TOML_TIME_LOCAL:
        return "local time";
    }
    return "unknown";
}

int gs_toml_line(const struct gs_toml_value *v)
{
    return v == NULL ? 0 : v->line;
}

int gs_toml_col(const struct gs_toml_value *v)
{
    return v == NULL ? 0 : v->col;
}

size_t gs_toml_count(const struct gs_toml_value *v)
{
    if (v == NULL)
        return 0;
    if (v->type == GS_TOML_TABLE)
        return v->u.table.count;
    if (v->type == GS_TOML_ARRAY)
        return v->u.array.count;
    return 0;
}

const struct gs_toml_value *gs_toml_at(const struct gs_toml_value *v, size_t i)
{
    if (i >= gs_toml_count(v))
        return NULL;
    if (v->type == GS_TOML_TABLE)
        return v->u.table.entries[i].value;
    return v->u.array.items[i];
}

static const struct toml_entry *entry_at(const struct gs_toml_value *table, size_t i)
{
    if (table == NULL || table->type != GS_TOML_TABLE || i >= table->u.table.count)
        return NULL;
    return &table->u.table.entries[i];
}

const char *gs_toml_key_at(const struct gs_toml_value *table, size_t i, size_t *ret_len)
{
    const struct toml_entry *e = entry_at(table, i);

    if (e == NULL)
        return NULL;
    if (ret_len != NULL)
        *ret_len = e->key_len;
    return e->key;
}

int gs_toml_key_line(const struct gs_toml_value *table, size_t i)
{
    const struct toml_entry *e = entry_at(table, i);

    return e == NULL ? 0 : e->key_line;
}

int gs_toml_key_col(const struct gs_toml_value *table, size_t i)
{
    const struct toml_entry *e = entry_at(table, i);

    return e == NULL ? 0 : e->key_col;
}

const struct gs_toml_value *gs_toml_getn(const struct gs_toml_value *table, const char *key,
                                         size_t len)
{
    const struct toml_entry *e;

    if (table == NULL || table->type != GS_TOML_TABLE || (key == NULL && len > 0))
        return NULL;
    e = toml_table_find(table, key, len);
    return e == NULL ? NULL : e->value;
}

const struct gs_toml_value *gs_toml_get(const struct gs_toml_value *table, const char *key)
{
    if (key == NULL)
        return NULL;
    return gs_toml_getn(table, key, strlen(key));
}

const struct gs_toml_value *gs_toml_get_path(const struct gs_toml_value *table, const char *path)
{
    const struct gs_toml_value *v = table;
    const char *part = path, *dot;

    if (path == NULL)
        return NULL;
    for (;;) {
        dot = strchr(part, '.');
        if (dot == NULL)
            break;
        if (dot == part)
            return NULL;
        v = gs_toml_getn(v, part, (size_t)(dot - part));
        part = dot + 1;
    }
    if (*part == '\0')
        return NULL;
    return gs_toml_getn(v, part, strlen(part));
}

static int check_type(const struct gs_toml_value *v, enum gs_toml_type type)
{
    if (v == NULL)
        return -ENOENT;
    return v->type == type ? 0 : -EINVAL;
}

int gs_toml_as_string(const struct gs_toml_value *v, const char **ret_str, size_t *ret_len)
{
    int rc = check_type(v, GS_TOML_STRING);

    if (rc < 0)
        return rc;
    *ret_str = v->u.str.ptr;
    if (ret_len != NULL)
        *ret_len = v->u.str.len;
    return 0;
}

int gs_toml_as_int(const struct gs_toml_value *v, int64_t *ret_int)
{
    int rc = check_type(v, GS_TOML_INTEGER);

    if (rc < 0)
        return rc;
    *ret_int = v->u.integer;
    return 0;
}

int gs_toml_as_float(const struct gs_toml_value *v, double *ret_float)
{
    if (v == NULL)
        return -ENOENT;
    if (v->type == GS_TOML_FLOAT)
        *ret_float = v->u.real;
    else if (v->type == GS_TOML_INTEGER)
        *ret_float = (double)v->u.integer;
    else
        return -EINVAL;
    return 0;
}

int gs_toml_as_bool(const struct gs_toml_value *v, bool *ret_bool)
{
    int rc = check_type(v, GS_TOML_BOOL);

    if (rc < 0)
        return rc;
    *ret_bool = v->u.boolean;
    return 0;
}

int gs_toml_as_datetime(const struct gs_toml_value *v, struct gs_toml_datetime *ret_dt)
{
    if (v == NULL)
        return -ENOENT;
    switch (v->type) {
    case GS_TOML_DATETIME:
    case GS_TOML_DATETIME_LOCAL:
    case GS_TOML_DATE_LOCAL:
    case GS_TOML_TIME_LOCAL:
        *ret_dt = v->u.dt;
        return 0;
    default:
        return -EINVAL;
    }
}
