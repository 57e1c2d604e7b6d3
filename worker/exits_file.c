/*
 * exits_file.c: unacknowledged task exits kept on disk (see exits_file.h).
 *
 * Durability is what the file is for, so unlike the task ledger it is fsynced: the exit of
 * a job that finished must survive the machine going down with gschedd before the
 * acknowledgement came. Exits are few (one per task, until acknowledged, usually within a
 * heartbeat), so the whole file is rewritten each time.
 */
#include "worker/exits_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/path.h"

#define MAX_FILE (64u << 20)

/* fsync of the directory that holds path, so a rename in it is durable. */
static int sync_dir(const char *path)
{
    char dir[PATH_MAX];
    char *slash;
    int fd, rc = 0;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fsync(fd) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

int wrk_exits_save(const char *path, Gs__TaskExit *const *exits, size_t n)
{
    Gs__NodeRegister msg = GS__NODE_REGISTER__INIT;
    char tmp[PATH_MAX];
    uint8_t *buf = NULL;
    size_t len;
    int fd = -1, rc = 0;

    if (n == 0) {
        if (unlink(path) < 0 && errno != ENOENT)
            return -errno;
        return sync_dir(path);
    }
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    msg.unacked_exits = (Gs__TaskExit **)exits;
    msg.n_unacked_exits = n;
    len = gs__node_register__get_packed_size(&msg);
    buf = malloc(len + 1);
    if (buf == NULL)
        return -ENOMEM;
    gs__node_register__pack(&msg, buf);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    rc = gs_write_all(fd, buf, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc == 0)
        rc = sync_dir(path);
    else
        unlink(tmp);
out:
    free(buf);
    return rc;
}

int wrk_exits_load(const char *path, Gs__NodeRegister **ret)
{
    struct stat st;
    uint8_t *buf = NULL;
    size_t got = 0;
    int fd, rc = 0;

    *ret = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    if (fstat(fd, &st) < 0 || st.st_size < 0 || (uint64_t)st.st_size > MAX_FILE) {
        rc = -EBADMSG;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -EBADMSG;
            goto out;
        }
        got += (size_t)n;
    }
    *ret = gs__node_register__unpack(NULL, got, buf);
    if (*ret == NULL)
        rc = -EBADMSG;
out:
    free(buf);
    close(fd);
    return rc;
}
