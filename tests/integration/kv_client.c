/*
 * kv_client.c: the job's key/value store through trainer/kv.h, as a program inside a job
 * uses it, for tests/integration/kv.sh (the shell side there uses gsched kv).
 *
 *     kv_client put KEY HEX          the value is HEX's bytes
 *     kv_client get KEY TIMEOUT_MS   prints the value's bytes in hex
 *
 * Prints "ok" or the value, exit 0; else "rc=N: message", exit 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/kv.h"

static int from_hex(const char *hex, unsigned char *out, size_t cap, size_t *ret_len)
{
    size_t n = strlen(hex) / 2;
    unsigned int byte;

    if (strlen(hex) % 2 != 0 || n > cap)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
            return -EINVAL;
        out[i] = (unsigned char)byte;
    }
    *ret_len = n;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned char value[TRN_KV_VALUE_MAX];
    char err[512] = "";
    size_t len = 0;
    int rc;

    if (argc != 4 || (strcmp(argv[1], "put") != 0 && strcmp(argv[1], "get") != 0)) {
        fprintf(stderr, "usage: kv_client put KEY HEX | get KEY TIMEOUT_MS\n");
        return 2;
    }
    if (strcmp(argv[1], "put") == 0) {
        rc = from_hex(argv[3], value, sizeof(value), &len);
        if (rc == 0)
            rc = trn_kv_put(argv[2], value, len, err, sizeof(err));
    } else {
        rc = trn_kv_get(argv[2], value, sizeof(value), &len, atoi(argv[3]), err, sizeof(err));
    }
    if (rc < 0) {
        printf("rc=%d: %s\n", rc, err);
        return 1;
    }
    if (strcmp(argv[1], "put") == 0) {
        puts("ok");
        return 0;
    }
    for (size_t i = 0; i < len; i++)
        printf("%02x", value[i]);
    putchar('\n');
    return 0;
}
