/*
 * toml_bench.c: parses one TOML file (argv[1]) REPEAT times with gs_toml_parse() and prints
 * the mean throughput. Used by bench/toml_parse.sh, which compares it with Python's tomllib
 * on the same file in the same run, and under callgrind for an exact instruction count.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/toml.h"

static int read_file(const char *path, struct gs_buf *out)
{
    char chunk[65536];
    FILE *f = fopen(path, "rb");
    size_t n;
    int rc = 0;

    if (f == NULL)
        return -errno;
    while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = gs_buf_append(out, chunk, n);
    if (rc == 0 && ferror(f))
        rc = -EIO;
    fclose(f);
    return rc;
}

int main(int argc, char **argv)
{
    struct gs_buf text = GS_BUF_INIT;
    struct gs_error err;
    uint64_t start, ns;
    int repeat, rc;

    if (argc != 3 || (repeat = atoi(argv[2])) < 1) {
        fprintf(stderr, "usage: toml_bench FILE.toml REPEAT\n");
        return 2;
    }
    rc = read_file(argv[1], &text);
    if (rc < 0) {
        fprintf(stderr, "toml_bench: %s: %s\n", argv[1], gs_strerror(rc));
        return 1;
    }
    start = gs_clock_mono_ns();
    for (int i = 0; i < repeat && rc == 0; i++) {
        struct gs_toml_doc *doc = NULL;
        rc = gs_toml_parse(text.data, text.len, &doc, &err);
        gs_toml_free(doc);
    }
    ns = gs_clock_mono_ns() - start;
    if (rc < 0) {
        fprintf(stderr, "toml_bench: %s:%d:%d: %s\n", argv[1], err.line, err.col, err.msg);
        gs_buf_release(&text);
        return 1;
    }
    printf("bytes=%zu repeat=%d seconds=%.6f mb_per_s=%.2f\n", text.len, repeat, ns / 1e9,
           (double)text.len * repeat / (ns / 1e9) / 1e6);
    gs_buf_release(&text);
    return 0;
}
