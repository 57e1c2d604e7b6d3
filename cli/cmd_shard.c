/*
 * cmd_shard.c: `gsched shard build|check|info`, datasets for gsched-train
 * (sharding/manifest.h, sharding/shard.h).
 *
 *   build --out DIR [--shard-tokens N] [--val-tokens N | --val-fraction F]
 *         [--raw u8|u16|u32 --vocab V] FILE...
 *       Text files become byte-level tokens (vocab 256, one token per byte); with --raw the
 *       files are raw little-endian token ids of that width, each below V. The files' tokens
 *       form one stream, in the order given; its last val tokens are held out (the val
 *       split), the rest is the train split; each split is cut into shards of N tokens (the
 *       last one shorter). Sizes are known from the files before anything is written, so
 *       bad input is refused before DIR is touched; a problem found while streaming (an id
 *       not below V) removes what was written. One line per shard, then a summary; the
 *       manifest is written last, so a DIR with a manifest holds a complete dataset, and a
 *       DIR that already has one is refused.
 *   check DIR
 *       Reads every shard in full: checksum, ids, header against the manifest. One line per
 *       shard; exit 1 when any is bad, each bad one named on stderr.
 *   info DIR [--json]
 *       The manifest, each shard's header checked against it (not the checksums).
 *
 * Exit status: 0 done, 1 the action failed, 2 bad usage.
 */
#include "cli/commands.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "common/json.h"
#include "sharding/manifest.h"

#define DEFAULT_SHARD_TOKENS (UINT64_C(1) << 24)
#define DEFAULT_VAL_FRACTION 0.01
#define READ_CHUNK 65536

static const char shard_usage[] =
    "usage: gsched shard build --out DIR [--shard-tokens N] [--val-tokens N | --val-fraction F]\n"
    "                          [--raw u8|u16|u32 --vocab V] FILE...\n"
    "       gsched shard check DIR\n"
    "       gsched shard info DIR [--json]\n"
    "build: FILEs (text: one token per byte, vocab 256; --raw: little-endian ids of that\n"
    "       width, each below V) into shards of N tokens (default 16777216) in DIR, the last\n"
    "       val tokens (default 1% of them) held out as the val split\n"
    "check: read every shard of DIR in full and verify its checksum; exit 1 naming bad ones\n"
    "info:  the dataset's shards (--json: one object)\n";

static const struct cli_opt build_opts[] = {
    {"--out", "-o", true, 'o'},        {"--shard-tokens", NULL, true, 'n'},
    {"--val-tokens", NULL, true, 'v'}, {"--val-fraction", NULL, true, 'f'},
    {"--raw", NULL, true, 'r'},        {"--vocab", NULL, true, 'V'},
    {"--help", "-h", false, 'h'},      {NULL, NULL, false, 0},
};

struct build_opts {
    const char *out;
    uint64_t shard_tokens;
    uint64_t val_tokens;
    double val_fraction;
    bool has_val_tokens, has_val_fraction;
    bool raw;
    enum shard_dtype raw_dtype; /* input width with --raw */
    uint64_t vocab;             /* 0 until --vocab */
    const char **files;
    int nfiles;
    bool help;
};

/* One build's progress: where tokens go, what was written (to undo on failure). */
struct build {
    const struct build_opts *o;
    struct shard_manifest *m;
    enum shard_dtype dtype; /* of the shards */
    uint32_t vocab;
    uint64_t train_total, total; /* tokens: the first train_total are train */
    uint64_t emitted;
    struct shard_writer *w;
    enum shard_split w_split;
    char w_file[64];
    unsigned next_index[2]; /* per split */
    bool created_dir;
};

static int shard_fail(const char *msg)
{
    fprintf(stderr, "gsched shard: %s\n", msg);
    return 1;
}

static int parse_val_fraction(const char *value, double *ret)
{
    char *end;
    double f;

    errno = 0;
    f = strtod(value, &end);
    if (value[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(f) || f < 0 || f >= 1)
        return cli_usage_error("shard build", "--val-fraction wants a number in [0, 1), not '%s'",
                               value);
    *ret = f;
    return 0;
}

static int parse_build_option(struct build_opts *o, int opt, const char *value)
{
    uint64_t n;

    switch (opt) {
    case 'o':
        o->out = value;
        return 0;
    case 'n':
        if (cli_parse_u64(value, &n) < 0 || n < 2)
            return cli_usage_error("shard build", "--shard-tokens wants 2 or more, not '%s'",
                                   value);
        o->shard_tokens = n;
        return 0;
    case 'v':
        if (cli_parse_u64(value, &o->val_tokens) < 0)
            return cli_usage_error("shard build", "--val-tokens wants a token count, not '%s'",
                                   value);
        o->has_val_tokens = true;
        return 0;
    case 'f':
        o->has_val_fraction = true;
        return parse_val_fraction(value, &o->val_fraction);
    case 'r':
        o->raw = true;
        if (shard_dtype_parse(value, &o->raw_dtype) < 0)
            return cli_usage_error("shard build", "--raw is u8, u16 or u32, not '%s'", value);
        return 0;
    case 'V':
        if (cli_parse_u64(value, &n) < 0 || n < 1 || n > (UINT64_C(1) << 31))
            return cli_usage_error("shard build", "--vocab wants 1 to 2147483648, not '%s'", value);
        o->vocab = n;
        return 0;
    default:
        o->help = true;
        return 0;
    }
}

/* What single options cannot say: combinations. */
static int check_build_opts(const struct build_opts *o)
{
    if (o->out == NULL)
        return cli_usage_error("shard build", "where to? (--out DIR)");
    if (o->nfiles == 0)
        return cli_usage_error("shard build",
                               "which files? (gsched shard build --out DIR FILE...)");
    if (o->has_val_tokens && o->has_val_fraction)
        return cli_usage_error("shard build", "--val-tokens and --val-fraction exclude each other");
    if (o->raw && o->vocab == 0)
        return cli_usage_error("shard build", "--raw needs --vocab V (ids are below V)");
    if (!o->raw && o->vocab != 0)
        return cli_usage_error("shard build", "--vocab goes with --raw (text has vocab 256)");
    if (o->raw && !shard_vocab_fits(o->raw_dtype, o->vocab))
        return cli_usage_error("shard build", "--vocab %" PRIu64 " does not fit --raw %s", o->vocab,
                               shard_dtype_name(o->raw_dtype));
    return 0;
}

static int parse_build_args(int argc, char **argv, struct build_opts *o)
{
    struct cli_args a;
    int opt, status = 0;

    *o = (struct build_opts){.shard_tokens = DEFAULT_SHARD_TOKENS,
                             .val_fraction = DEFAULT_VAL_FRACTION};
    o->files = calloc((size_t)argc, sizeof(*o->files));
    if (o->files == NULL)
        return shard_fail("out of memory");
    cli_args_init(&a, argc, argv);
    while (status == 0 && (opt = cli_args_next(&a, build_opts)) != 0) {
        if (opt < 0)
            return cli_usage_error("shard build", "%s: '%s'", a.why, a.bad);
        if (opt == CLI_ARGS_OPERAND)
            o->files[o->nfiles++] = a.value;
        else
            status = parse_build_option(o, opt, a.value);
    }
    if (status != 0 || o->help)
        return status;
    return check_build_opts(o);
}

/* Counts the stream's tokens from the files' sizes; refuses what cannot be read. */
static int count_tokens(const struct build_opts *o, uint64_t *ret_total)
{
    size_t width = o->raw ? (size_t)o->raw_dtype : 1;
    uint64_t total = 0;
    struct stat st;

    for (int i = 0; i < o->nfiles; i++) {
        if (stat(o->files[i], &st) < 0) {
            fprintf(stderr, "gsched shard build: %s: %s\n", o->files[i], strerror(errno));
            return 1;
        }
        if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "gsched shard build: %s: not a regular file\n", o->files[i]);
            return 1;
        }
        if ((uint64_t)st.st_size % width != 0) {
            fprintf(stderr,
                    "gsched shard build: %s: %lld bytes is not a whole number of %s tokens\n",
                    o->files[i], (long long)st.st_size, shard_dtype_name(o->raw_dtype));
            return 1;
        }
        total += (uint64_t)st.st_size / width;
    }
    *ret_total = total;
    return 0;
}

/* The split point: how many of total tokens are train. */
static int plan_split(const struct build_opts *o, uint64_t total, uint64_t *ret_train)
{
    uint64_t val = o->has_val_tokens ? o->val_tokens : (uint64_t)(o->val_fraction * (double)total);

    if (total == 0) {
        fprintf(stderr, "gsched shard build: the files hold no tokens\n");
        return 1;
    }
    if (val >= total) {
        fprintf(stderr,
                "gsched shard build: --val-tokens %" PRIu64 " leaves no train tokens (the files"
                " hold %" PRIu64 ")\n",
                val, total);
        return 1;
    }
    *ret_train = total - val;
    return 0;
}

/* DIR exists (made now if not) and holds no dataset yet. */
static int prepare_dir(struct build *b)
{
    char path[PATH_MAX];
    struct stat st;

    if (mkdir(b->o->out, 0755) == 0)
        b->created_dir = true;
    else if (errno != EEXIST) {
        fprintf(stderr, "gsched shard build: --out %s: %s\n", b->o->out, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof(path), "%s/%s", b->o->out, SHARD_MANIFEST_FILE);
    if (stat(path, &st) == 0) {
        fprintf(stderr,
                "gsched shard build: --out %s already holds a dataset (%s); choose another "
                "directory\n",
                b->o->out, SHARD_MANIFEST_FILE);
        return 1;
    }
    return 0;
}

static int report(const struct gs_error *err)
{
    return shard_fail(err->msg);
}

/* Commits the open shard, lists it and prints its line. */
static int finish_shard(struct build *b)
{
    struct shard_header h;
    struct gs_error err;
    int rc = shard_writer_commit(b->w, &h, &err);

    b->w = NULL;
    if (rc == 0)
        rc = shard_manifest_add(b->m, b->w_file, b->w_split, &h, &err);
    if (rc < 0)
        return report(&err);
    printf("shard=%s split=%s tokens=%" PRIu64 " dtype=%s vocab=%" PRIu32 " crc32c=%08" PRIX32 "\n",
           b->w_file, shard_split_name(b->w_split), h.tokens, shard_dtype_name(h.dtype), h.vocab,
           h.crc32c);
    return 0;
}

static int start_shard(struct build *b, enum shard_split split)
{
    char path[PATH_MAX + 64];
    struct gs_error err;

    snprintf(b->w_file, sizeof(b->w_file), "%s-%05u.bin", shard_split_name(split),
             b->next_index[split]++);
    snprintf(path, sizeof(path), "%s/%s", b->o->out, b->w_file);
    b->w_split = split;
    if (shard_writer_open(path, b->dtype, b->vocab, &b->w, &err) < 0)
        return report(&err);
    return 0;
}

/* Feeds n stream tokens to the shards, cutting at the shard size and at the split point. */
static int emit(struct build *b, const uint32_t *tokens, size_t n)
{
    struct gs_error err;
    int status;

    while (n > 0) {
        enum shard_split split = b->emitted < b->train_total ? SHARD_SPLIT_TRAIN : SHARD_SPLIT_VAL;
        uint64_t split_left =
            split == SHARD_SPLIT_TRAIN ? b->train_total - b->emitted : b->total - b->emitted;
        uint64_t room, take;

        if (b->w != NULL && b->w_split != split && (status = finish_shard(b)) != 0)
            return status;
        if (b->w == NULL && (status = start_shard(b, split)) != 0)
            return status;
        room = b->o->shard_tokens - shard_writer_tokens(b->w);
        take = n < room ? n : room;
        take = take < split_left ? take : split_left;
        if (shard_writer_append(b->w, tokens, (size_t)take, &err) < 0)
            return report(&err);
        tokens += take;
        n -= (size_t)take;
        b->emitted += take;
        if (shard_writer_tokens(b->w) == b->o->shard_tokens && (status = finish_shard(b)) != 0)
            return status;
    }
    return 0;
}

/* Raw bytes to ids; an id not below the vocab is named with its file and position. */
static int decode_chunk(struct build *b, const char *file, uint64_t at, const unsigned char *raw,
                        size_t n, uint32_t *ids)
{
    size_t width = b->o->raw ? (size_t)b->o->raw_dtype : 1;

    for (size_t i = 0; i < n; i++) {
        uint32_t id = 0;

        for (size_t k = 0; k < width; k++)
            id |= (uint32_t)raw[i * width + k] << (8 * k);
        if (id >= b->vocab) {
            fprintf(stderr,
                    "gsched shard build: %s: token %" PRIu64 " is id %" PRIu32
                    ", not below --vocab %" PRIu32 "\n",
                    file, at + i, id, b->vocab);
            return 1;
        }
        ids[i] = id;
    }
    return 0;
}

static int stream_file(struct build *b, const char *file, unsigned char *raw, uint32_t *ids)
{
    size_t width = b->o->raw ? (size_t)b->o->raw_dtype : 1, got;
    FILE *f = fopen(file, "rb");
    uint64_t at = 0;
    int status = 0;

    if (f == NULL) {
        fprintf(stderr, "gsched shard build: %s: %s\n", file, strerror(errno));
        return 1;
    }
    while (status == 0 && (got = fread(raw, width, READ_CHUNK, f)) > 0) {
        if (b->emitted + got > b->total) {
            fprintf(stderr, "gsched shard build: %s: grew while being read\n", file);
            status = 1;
            break;
        }
        status = decode_chunk(b, file, at, raw, got, ids);
        if (status == 0)
            status = emit(b, ids, got);
        at += got;
    }
    if (status == 0 && ferror(f)) {
        fprintf(stderr, "gsched shard build: %s: read error\n", file);
        status = 1;
    }
    fclose(f);
    return status;
}

/* Removes the shards written so far, and DIR when this build made it. */
static void undo(struct build *b)
{
    shard_writer_abort(b->w);
    b->w = NULL;
    for (size_t i = 0; b->m != NULL && i < b->m->nshards; i++)
        unlink(b->m->shards[i].path);
    if (b->created_dir)
        rmdir(b->o->out);
}

static int write_dataset(struct build *b)
{
    unsigned char *raw = malloc(READ_CHUNK * 4);
    uint32_t *ids = malloc(READ_CHUNK * sizeof(*ids));
    struct gs_error err;
    int status = raw == NULL || ids == NULL ? shard_fail("out of memory") : 0;

    for (int i = 0; status == 0 && i < b->o->nfiles; i++)
        status = stream_file(b, b->o->files[i], raw, ids);
    if (status == 0 && b->emitted != b->total)
        status = shard_fail("an input file shrank while being read");
    if (status == 0 && b->w != NULL)
        status = finish_shard(b);
    if (status == 0 && shard_manifest_write(b->m, &err) < 0)
        status = report(&err);
    free(raw);
    free(ids);
    return status;
}

static int cmd_build(int argc, char **argv)
{
    struct build_opts o;
    struct build b = {.o = &o};
    int status = parse_build_args(argc, argv, &o);

    if (status != 0 || o.help) {
        if (o.help)
            fputs(shard_usage, stdout);
        goto out;
    }
    b.vocab = o.raw ? (uint32_t)o.vocab : 256;
    b.dtype = shard_dtype_for_vocab(b.vocab);
    status = count_tokens(&o, &b.total);
    if (status == 0)
        status = plan_split(&o, b.total, &b.train_total);
    if (status == 0)
        status = prepare_dir(&b);
    if (status != 0)
        goto out;
    b.m = shard_manifest_new(o.out);
    status = b.m == NULL ? shard_fail("out of memory") : write_dataset(&b);
    if (status != 0)
        undo(&b);
    else
        printf("dataset=%s shards=%zu train_tokens=%" PRIu64 " val_tokens=%" PRIu64
               " vocab=%" PRIu32 "\n",
               o.out, b.m->nshards, b.train_total, b.total - b.train_total, b.vocab);
out:
    shard_manifest_free(b.m);
    free(o.files);
    return status;
}

/* --- check and info --- */

/* The one DIR operand (and --json where allowed) of check and info. */
static int parse_dir_args(const char *cmd, int argc, char **argv, bool allow_json,
                          const char **ret_dir, bool *ret_json)
{
    static const struct cli_opt opts[] = {
        {"--json", NULL, false, 'j'}, {"--help", "-h", false, 'h'}, {NULL, NULL, false, 0}};
    struct cli_args a;
    int opt;

    *ret_dir = NULL;
    *ret_json = false;
    cli_args_init(&a, argc, argv);
    while ((opt = cli_args_next(&a, opts)) != 0) {
        if (opt < 0)
            return cli_usage_error(cmd, "%s: '%s'", a.why, a.bad);
        if (opt == 'h') {
            fputs(shard_usage, stdout);
            return -1;
        }
        if (opt == 'j' && !allow_json)
            return cli_usage_error(cmd, "unknown option '--json'");
        if (opt == 'j')
            *ret_json = true;
        else if (*ret_dir != NULL)
            return cli_usage_error(cmd, "one dataset directory at a time ('%s')", a.value);
        else
            *ret_dir = a.value;
    }
    if (*ret_dir == NULL)
        return cli_usage_error(cmd, "which dataset? (a directory from gsched shard build)");
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    struct shard_manifest *m = NULL;
    struct gs_error err;
    const char *dir;
    size_t bad = 0;
    bool json;
    int status = parse_dir_args("shard check", argc, argv, false, &dir, &json);

    if (status != 0)
        return status < 0 ? 0 : status;
    if (shard_manifest_read(dir, &m, &err) < 0)
        return report(&err);
    for (size_t i = 0; i < m->nshards; i++) {
        if (shard_manifest_check_shard(m, i, SHARD_VERIFY, &err) < 0) {
            fprintf(stderr, "gsched shard check: %s\n", err.msg);
            printf("shard=%s bad\n", m->shards[i].file);
            bad++;
        } else {
            printf("shard=%s ok tokens=%" PRIu64 "\n", m->shards[i].file, m->shards[i].tokens);
        }
    }
    printf("dataset=%s shards=%zu bad=%zu\n", dir, m->nshards, bad);
    shard_manifest_free(m);
    return bad > 0 ? 1 : 0;
}

static void info_json(const struct shard_manifest *m, struct gs_json *j)
{
    gs_json_object_begin(j);
    gs_json_kv_string(j, "dir", m->dir);
    gs_json_kv_int(j, "format", SHARD_MANIFEST_FORMAT);
    gs_json_kv_uint(j, "vocab", m->vocab);
    gs_json_kv_uint(j, "train_tokens", shard_manifest_tokens(m, SHARD_SPLIT_TRAIN));
    gs_json_kv_uint(j, "val_tokens", shard_manifest_tokens(m, SHARD_SPLIT_VAL));
    gs_json_key(j, "shards");
    gs_json_array_begin(j);
    for (size_t i = 0; i < m->nshards; i++) {
        const struct shard_manifest_shard *s = &m->shards[i];
        char crc[16];

        snprintf(crc, sizeof(crc), "%08" PRIX32, s->crc32c);
        gs_json_object_begin(j);
        gs_json_kv_string(j, "file", s->file);
        gs_json_kv_string(j, "split", shard_split_name(s->split));
        gs_json_kv_uint(j, "tokens", s->tokens);
        gs_json_kv_string(j, "dtype", shard_dtype_name(s->dtype));
        gs_json_kv_uint(j, "vocab", s->vocab);
        gs_json_kv_string(j, "crc32c", crc);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
    gs_json_object_end(j);
}

static int info_text(const struct shard_manifest *m, struct gs_buf *out)
{
    int rc = gs_buf_printf(out,
                           "dataset=%s format=%d vocab=%" PRIu32 " shards=%zu train_tokens=%" PRIu64
                           " val_tokens=%" PRIu64 "\n",
                           m->dir, SHARD_MANIFEST_FORMAT, m->vocab, m->nshards,
                           shard_manifest_tokens(m, SHARD_SPLIT_TRAIN),
                           shard_manifest_tokens(m, SHARD_SPLIT_VAL));

    for (size_t i = 0; rc == 0 && i < m->nshards; i++) {
        const struct shard_manifest_shard *s = &m->shards[i];

        rc = gs_buf_printf(out,
                           "shard=%s split=%s tokens=%" PRIu64 " dtype=%s vocab=%" PRIu32
                           " crc32c=%08" PRIX32 "\n",
                           s->file, shard_split_name(s->split), s->tokens,
                           shard_dtype_name(s->dtype), s->vocab, s->crc32c);
    }
    return rc;
}

static int cmd_info(int argc, char **argv)
{
    struct gs_buf out = GS_BUF_INIT;
    struct shard_manifest *m = NULL;
    struct gs_error err;
    struct gs_json j;
    const char *dir;
    bool json;
    int rc, status = parse_dir_args("shard info", argc, argv, true, &dir, &json);

    if (status != 0)
        return status < 0 ? 0 : status;
    if (shard_manifest_load(dir, &m, &err) < 0)
        return report(&err);
    if (json) {
        gs_json_init(&j, &out);
        info_json(m, &j);
        rc = gs_json_finish(&j);
        if (rc == 0)
            rc = gs_buf_putc(&out, '\n');
    } else {
        rc = info_text(m, &out);
    }
    if (rc == 0 && fwrite(out.data, 1, out.len, stdout) != out.len)
        rc = -EIO;
    gs_buf_release(&out);
    shard_manifest_free(m);
    return rc == 0 ? 0 : shard_fail(gs_strerror(rc));
}

int cli_cmd_shard(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("shard", "build, check or info?");
    if (strcmp(argv[1], "build") == 0)
        return cmd_build(argc - 1, argv + 1);
    if (strcmp(argv[1], "check") == 0)
        return cmd_check(argc - 1, argv + 1);
    if (strcmp(argv[1], "info") == 0)
        return cmd_info(argc - 1, argv + 1);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(shard_usage, stdout);
        return 0;
    }
    return cli_usage_error("shard", "unknown subcommand '%s' (build, check or info)", argv[1]);
}
