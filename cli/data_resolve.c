/*
 * data_resolve.c: a dataset path to what gschedd needs of it (data_resolve.h). The
 * manifest is read with the manifest reader's own checks, so a typo in it is an error
 * here, at submit, with its line and column, not on a node when the job starts.
 */
#define _GNU_SOURCE /* realpath */

#include "cli/data_resolve.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/client.h"
#include "common/buf.h"
#include "common/path.h"
#include "sharding/cache.h"
#include "sharding/manifest.h"

static int resolve_dir(const char *path, struct gs_jobdata *d, struct gs_error *err);

/* DIR for "DIR" and for "DIR/manifest.toml", absolute and with links resolved. */
static int dataset_dir(const char *path, char out[PATH_MAX], struct gs_error *err)
{
    struct gs_buf abs = GS_BUF_INIT;
    char cwd[PATH_MAX];
    size_t n;
    int rc;

    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return gs_error_set(err, -errno, 0, 0, "current directory: %s", strerror(errno));
    rc = gs_path_absolute(cwd, path, &abs);
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "%s: %s", path, strerror(-rc));
        goto out;
    }
    n = abs.len;
    if (n > strlen(SHARD_MANIFEST_FILE) &&
        strcmp(abs.data + n - strlen(SHARD_MANIFEST_FILE), SHARD_MANIFEST_FILE) == 0 &&
        abs.data[n - strlen(SHARD_MANIFEST_FILE) - 1] == '/')
        abs.data[n - strlen(SHARD_MANIFEST_FILE) - 1] = '\0';
    if (realpath(abs.data, out) == NULL) {
        rc = gs_error_set(err, -errno, 0, 0, "%s: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    gs_buf_release(&abs);
    return rc;
}

/* Where the nodes' caches say dataset id came from, into dir; 0 or < 0 with err. */
static int source_of_id(const char *id, const char *socket_opt, char dir[PATH_MAX],
                        struct gs_error *err)
{
    Gs__DataRequest req = GS__DATA_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    char path[256];
    int rc;

    req.op = GS__DATA_OP__DATA_OP_STAT;
    req.dataset = (char *)id;
    env.body_case = GS__ENVELOPE__BODY_DATA_REQUEST;
    env.data_request = &req;
    if (cli_socket_path(socket_opt, path, sizeof(path)) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "dataset %s: no gschedd to ask where it is", id);
    rc = cli_request(path, &env, &reply);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "dataset %s: gschedd could not be asked", id);
    rc = gs_error_set(err, -ENOENT, 0, 0,
                      "dataset %s: no node's cache knows where it came from; name its directory",
                      id);
    for (size_t i = 0;
         reply->body_case == GS__ENVELOPE__BODY_DATA_REPLY && i < reply->data_reply->n_holdings;
         i++) {
        const char *src = reply->data_reply->holdings[i]->holding->source;

        if (src != NULL && src[0] == '/' && strlen(src) < PATH_MAX) {
            snprintf(dir, PATH_MAX, "%s", src);
            rc = 0;
            break;
        }
    }
    gs_proto_envelope_free(reply);
    return rc;
}

int cli_data_resolve(const char *path, const char *socket_opt, struct gs_jobdata *d,
                     struct gs_error *err)
{
    struct stat st;

    if (gs_data_id_valid(path) && stat(path, &st) < 0) {
        char dir[PATH_MAX];
        int rc = source_of_id(path, socket_opt, dir, err);

        if (rc == 0)
            rc = resolve_dir(dir, d, err);
        if (rc == 0 && strcmp(d->id, path) != 0)
            rc = gs_error_set(err, -ESTALE, 0, 0,
                              "dataset %s: %s, where it was staged from, now holds dataset %s",
                              path, dir, d->id);
        return rc;
    }
    return resolve_dir(path, d, err);
}

static int resolve_dir(const char *path, struct gs_jobdata *d, struct gs_error *err)
{
    struct shard_manifest *m = NULL;
    char dir[PATH_MAX], id[SHARD_DATASET_ID_SIZE];
    uint64_t bytes = 0;
    char *source;
    int rc;

    rc = dataset_dir(path, dir, err);
    if (rc < 0)
        return rc;
    rc = shard_manifest_read(dir, &m, err);
    if (rc < 0)
        return rc;
    if (m->nshards == 0 || m->nshards > UINT32_MAX) {
        rc = gs_error_set(err, -EINVAL, 0, 0, "%s/%s: %s", dir, SHARD_MANIFEST_FILE,
                          m->nshards == 0 ? "lists no shard" : "lists too many shards");
        goto out;
    }
    rc = shard_dataset_id(dir, id, err);
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < m->nshards; i++)
        bytes += SHARD_HEADER_SIZE + m->shards[i].tokens * (uint64_t)m->shards[i].dtype;
    source = strdup(dir);
    if (source == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        goto out;
    }
    free(d->source);
    d->source = source;
    snprintf(d->id, sizeof(d->id), "%s", id);
    d->shards = (uint32_t)m->nshards;
    d->bytes = bytes;
out:
    shard_manifest_free(m);
    return rc;
}
