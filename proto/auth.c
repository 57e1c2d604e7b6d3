/*
 * auth.c: the cluster key that authenticates worker <-> gschedd connections, and the proofs
 * made with it (conn.c runs the exchange; auth.h says what goes over the wire).
 *
 * The key is a file of random bytes every daemon of the cluster holds, readable by root
 * alone, as MUNGE's munge.key is: holding it is what makes a process a gsched daemon. The
 * checks before use refuse a key others could have read (group or other permission bits, an
 * owner other than us or root, a symbolic link), because a key that leaked lets anyone
 * register a node and be sent jobs to run as their users. The one exception is systemd's copy
 * for a service (LoadCredential, in $CREDENTIALS_DIRECTORY): systemd made it read-only for the
 * service's user alone, by owner or by an ACL whose mask shows as group bits.
 *
 * Proofs are HMAC-SHA256 (OpenSSL's libcrypto) over a fixed label, the sender's role and
 * name, the sender's nonce and the receiver's nonce, each length-prefixed; nonces come from
 * RAND_bytes. Comparisons are constant-time (CRYPTO_memcmp).
 */
#include "proto/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AUTH_LABEL "gsched-auth-1"

int gs_proto_auth_nonce(uint8_t out[GS_PROTO_AUTH_NONCE_SIZE])
{
    return RAND_bytes(out, GS_PROTO_AUTH_NONCE_SIZE) == 1 ? 0 : -EIO;
}

/* Appends a 32-bit big-endian length and then the bytes. */
static int put_field(struct gs_buf *b, const void *p, size_t len)
{
    uint8_t n[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
    int rc = gs_buf_append(b, n, sizeof(n));

    return rc < 0 ? rc : gs_buf_append(b, p, len);
}

int gs_proto_auth_proof(const struct gs_proto_auth_key *key, Gs__Role role, const char *name,
                        const uint8_t *sender_nonce, const uint8_t *receiver_nonce,
                        uint8_t out[GS_PROTO_AUTH_PROOF_SIZE])
{
    struct gs_buf msg = GS_BUF_INIT;
    uint8_t r = (uint8_t)role;
    unsigned int len = 0;
    int rc;

    if (key == NULL || key->len == 0 || name == NULL)
        return -EINVAL;
    rc = put_field(&msg, AUTH_LABEL, strlen(AUTH_LABEL));
    if (rc == 0)
        rc = put_field(&msg, &r, 1);
    if (rc == 0)
        rc = put_field(&msg, name, strlen(name));
    if (rc == 0)
        rc = put_field(&msg, sender_nonce, GS_PROTO_AUTH_NONCE_SIZE);
    if (rc == 0)
        rc = put_field(&msg, receiver_nonce, GS_PROTO_AUTH_NONCE_SIZE);
    if (rc < 0)
        goto out;
    if (HMAC(EVP_sha256(), key->bytes, (int)key->len, (const unsigned char *)msg.data, msg.len, out,
             &len) == NULL ||
        len != GS_PROTO_AUTH_PROOF_SIZE)
        rc = -EIO;
out:
    gs_buf_release(&msg);
    return rc;
}

bool gs_proto_auth_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}

/* Whether path names a file directly in the credentials directory systemd gave this service. */
static bool from_systemd(const char *path)
{
    const char *dir = getenv("CREDENTIALS_DIRECTORY");
    size_t n;

    if (dir == NULL || dir[0] != '/')
        return false;
    n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != '\0' &&
           strchr(path + n + 1, '/') == NULL && strcmp(path + n + 1, "..") != 0;
}

/* 0 when only root or this daemon's user can read or change the key; else -EPERM and why. */
static int check_private(const char *path, const struct stat *st, struct gs_buf *err)
{
    if ((st->st_mode & 077) != 0) {
        gs_buf_printf(err, "%s: open to others (mode %03o): the key must have mode 0600 or 0400",
                      path, (unsigned)(st->st_mode & 0777));
        return -EPERM;
    }
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        gs_buf_printf(err,
                      "%s: belongs to uid %u, who could change it: the key must belong to root "
                      "or to this daemon's user (uid %u)",
                      path, (unsigned)st->st_uid, (unsigned)geteuid());
        return -EPERM;
    }
    return 0;
}

int gs_proto_auth_key_load(const char *path, struct gs_proto_auth_key *key, struct gs_buf *err)
{
    struct stat st;
    ssize_t n;
    int fd, rc = 0;

    memset(key, 0, sizeof(*key));
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        gs_buf_printf(err, "%s: %s%s", path, strerror(errno),
                      errno == ELOOP ? " (a symbolic link: name the file itself)" : "");
        return rc;
    }
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        gs_buf_printf(err, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        gs_buf_printf(err, "%s: not a regular file", path);
        goto out;
    }
    if (!from_systemd(path) && (rc = check_private(path, &st, err)) < 0)
        goto out;
    n = read(fd, key->bytes, sizeof(key->bytes));
    if (n < 0) {
        rc = -errno;
        gs_buf_printf(err, "%s: %s", path, strerror(errno));
        goto out;
    }
    if ((size_t)n < GS_PROTO_AUTH_KEY_MIN || (size_t)st.st_size > sizeof(key->bytes)) {
        rc = -EINVAL;
        gs_buf_printf(err, "%s: %lld bytes; a key has %d to %zu bytes", path, (long long)st.st_size,
                      GS_PROTO_AUTH_KEY_MIN, sizeof(key->bytes));
        goto out;
    }
    key->len = (size_t)n;
out:
    close(fd);
    if (rc < 0)
        gs_proto_auth_key_clear(key);
    return rc;
}

int gs_proto_auth_key_create(const char *path)
{
    uint8_t bytes[GS_PROTO_AUTH_KEY_CREATE];
    size_t done = 0;
    int fd, rc = 0;

    if (RAND_bytes(bytes, sizeof(bytes)) != 1)
        return -EIO;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    while (done < sizeof(bytes)) {
        ssize_t n = write(fd, bytes + done, sizeof(bytes) - done);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        done += (size_t)n;
    }
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    close(fd);
    if (rc < 0)
        unlink(path);
out:
    OPENSSL_cleanse(bytes, sizeof(bytes));
    return rc;
}

void gs_proto_auth_key_clear(struct gs_proto_auth_key *key)
{
    if (key == NULL)
        return;
    OPENSSL_cleanse(key->bytes, sizeof(key->bytes));
    key->len = 0;
}
