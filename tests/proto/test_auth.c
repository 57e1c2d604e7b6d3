/*
 * test_auth.c: the cluster key file's checks (proto/auth.h) and the proofs made with it.
 * A key others could read, a symbolic link, a directory, or a file too short or too long is
 * refused with a reason naming the path; a created key is private and loads. Proofs depend
 * on every input and match between the two sides of an exchange.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/auth.h"

static char dir[64];
static struct gs_buf err;

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gs-auth-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    gs_buf_init(&err);
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    gs_buf_release(&err);
}

TestSuite(auth, .init = setup, .fini = teardown);

static void write_file(const char *path, size_t bytes, mode_t mode)
{
    char buf[2048];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    cr_assert_geq(fd, 0);
    memset(buf, 'k', sizeof(buf));
    cr_assert_eq(write(fd, buf, bytes), (ssize_t)bytes);
    close(fd);
    cr_assert_eq(chmod(path, mode), 0);
}

/* Loads path, which must fail with rc and a reason holding both path and what. */
static void refused(const char *path, int rc, const char *what)
{
    struct gs_proto_auth_key key;

    gs_buf_reset(&err);
    cr_assert_eq(gs_proto_auth_key_load(path, &key, &err), rc, "%s", err.data ? err.data : "");
    cr_assert_eq(key.len, 0);
    cr_assert(strstr(err.data, path) != NULL && strstr(err.data, what) != NULL, "%s", err.data);
}

Test(auth, a_created_key_is_private_and_loads)
{
    char path[128];
    struct gs_proto_auth_key key;
    struct stat st;

    snprintf(path, sizeof(path), "%s/gsched.key", dir);
    cr_assert_eq(gs_proto_auth_key_create(path), 0);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(st.st_size, GS_PROTO_AUTH_KEY_CREATE);
    cr_assert_eq(gs_proto_auth_key_load(path, &key, &err), 0, "%s", err.data);
    cr_assert_eq(key.len, GS_PROTO_AUTH_KEY_CREATE);
    cr_assert_eq(gs_proto_auth_key_create(path), -EEXIST, "an existing key is kept");
}

Test(auth, keys_others_could_read_or_that_are_not_keys_are_refused)
{
    char path[128], link[128];

    snprintf(path, sizeof(path), "%s/k", dir);
    write_file(path, 32, 0640);
    refused(path, -EPERM, "open to others (mode 640)");
    write_file(path, 32, 0604);
    refused(path, -EPERM, "mode 0600 or 0400");
    write_file(path, 8, 0600);
    refused(path, -EINVAL, "8 bytes");
    write_file(path, GS_PROTO_AUTH_KEY_MAX + 1, 0400);
    refused(path, -EINVAL, "1025 bytes");
    write_file(path, 32, 0400);
    snprintf(link, sizeof(link), "%s/link", dir);
    cr_assert_eq(symlink(path, link), 0);
    refused(link, -ELOOP, "symbolic link");
    refused(dir, -EINVAL, "not a regular file");
    snprintf(link, sizeof(link), "%s/none", dir);
    refused(link, -ENOENT, "No such file");
}

Test(auth, a_key_someone_else_owns_is_refused)
{
    struct gs_proto_auth_key key;
    char path[128];

    if (geteuid() != 0)
        cr_skip_test("only root can give a file to another user");
    snprintf(path, sizeof(path), "%s/k", dir);
    write_file(path, 32, 0600);
    cr_assert_eq(chown(path, 65534, 65534), 0);
    refused(path, -EPERM, "belongs to uid 65534, who could change it");
    cr_assert_eq(chown(path, 0, 0), 0);
    write_file(path, 32, 0400);
    cr_assert_eq(gs_proto_auth_key_load(path, &key, &err), 0, "%s", err.data);
}

/* Makes dir/NAME (mode 0700) and puts its path in out. */
static void subdir(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", dir, name);
    cr_assert_eq(mkdir(out, 0700), 0, "%s: %s", out, strerror(errno));
}

Test(auth, systemds_copy_is_taken_whatever_its_mode_and_nothing_beside_it)
{
    struct gs_proto_auth_key key;
    char creds[128], path[160];

    subdir(creds, sizeof(creds), "creds");
    snprintf(path, sizeof(path), "%s/gsched.key", creds);
    write_file(path, 32, 0440); /* as an ACL's mask shows in the group bits */
    refused(path, -EPERM, "open to others (mode 440)");
    cr_assert_eq(setenv("CREDENTIALS_DIRECTORY", creds, 1), 0);
    cr_assert_eq(gs_proto_auth_key_load(path, &key, &err), 0, "%s", err.data);
    cr_assert_eq(key.len, 32);

    subdir(path, sizeof(path), "creds/d"); /* not directly in the directory */
    strcat(path, "/gsched.key");
    write_file(path, 32, 0440);
    refused(path, -EPERM, "open to others");
    subdir(path, sizeof(path), "credsx"); /* a directory whose name only starts like it */
    strcat(path, "/gsched.key");
    write_file(path, 32, 0440);
    refused(path, -EPERM, "open to others");
    cr_assert_eq(unsetenv("CREDENTIALS_DIRECTORY"), 0);
}

Test(auth, proofs_cover_every_input_and_agree_between_sides)
{
    struct gs_proto_auth_key k, other;
    uint8_t n1[GS_PROTO_AUTH_NONCE_SIZE], n2[GS_PROTO_AUTH_NONCE_SIZE];
    uint8_t p[GS_PROTO_AUTH_PROOF_SIZE], q[GS_PROTO_AUTH_PROOF_SIZE];

    memset(&k, 0, sizeof(k));
    memset(k.bytes, 1, 32);
    k.len = 32;
    other = k;
    other.bytes[31] = 2;
    cr_assert_eq(gs_proto_auth_nonce(n1), 0);
    cr_assert_eq(gs_proto_auth_nonce(n2), 0);
    cr_assert_neq(memcmp(n1, n2, sizeof(n1)), 0, "fresh nonces");
    cr_assert_eq(gs_proto_auth_proof(&k, GS__ROLE__ROLE_WORKER, "n1", n1, n2, p), 0);
    cr_assert_eq(gs_proto_auth_proof(&k, GS__ROLE__ROLE_WORKER, "n1", n1, n2, q), 0);
    cr_assert(gs_proto_auth_equal(p, q, sizeof(p)), "the receiver computes the same");
    cr_assert_eq(gs_proto_auth_proof(&other, GS__ROLE__ROLE_WORKER, "n1", n1, n2, q), 0);
    cr_assert_not(gs_proto_auth_equal(p, q, sizeof(p)), "another key");
    cr_assert_eq(gs_proto_auth_proof(&k, GS__ROLE__ROLE_SCHEDULER, "n1", n1, n2, q), 0);
    cr_assert_not(gs_proto_auth_equal(p, q, sizeof(p)), "another role");
    cr_assert_eq(gs_proto_auth_proof(&k, GS__ROLE__ROLE_WORKER, "n2", n1, n2, q), 0);
    cr_assert_not(gs_proto_auth_equal(p, q, sizeof(p)), "another name");
    cr_assert_eq(gs_proto_auth_proof(&k, GS__ROLE__ROLE_WORKER, "n1", n2, n1, q), 0);
    cr_assert_not(gs_proto_auth_equal(p, q, sizeof(p)), "nonces swapped");
    other.len = 0;
    cr_assert_eq(gs_proto_auth_proof(&other, GS__ROLE__ROLE_WORKER, "n1", n1, n2, q), -EINVAL);
}
