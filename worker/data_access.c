/*
 * data_access.c: whether a job's user may read a dataset's files (data_internal.h). The
 * worker runs as root and copies sources into its cache for jobs; it must not let a job
 * read, through the cache, what its user could not read directly, so it checks the
 * permission bits along the path against the user's uid and groups before it copies.
 * Pure but for stat(2) and getgrouplist(3); any thread (a copy's work function calls it).
 */
#define _GNU_SOURCE /* getgrouplist */

#include "worker/data_internal.h"

#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_GROUPS 256

static bool in_groups(gid_t gid, const gid_t *groups, int n)
{
    for (int i = 0; i < n; i++) {
        if (groups[i] == gid)
            return true;
    }
    return false;
}

static bool allowed(const struct stat *st, uid_t uid, const gid_t *groups, int ngroups,
                    mode_t want_user)
{
    mode_t want_group = want_user >> 3, want_other = want_user >> 6;

    if (uid == 0)
        return true;
    if (st->st_uid == uid)
        return (st->st_mode & want_user) == want_user;
    if (in_groups(st->st_gid, groups, ngroups))
        return (st->st_mode & want_group) == want_group;
    return (st->st_mode & want_other) == want_other;
}

/*
 * Whether user (uid, gid, name) may read path: every directory above it searchable and
 * the file itself readable (a directory: readable and searchable), by its permission bits.
 */
bool wrk_data_user_may_read(const char *path, uid_t uid, gid_t gid, const char *user)
{
    gid_t groups[MAX_GROUPS];
    int ngroups = MAX_GROUPS;
    char walk[PATH_MAX];
    struct stat st;

    if (uid == 0)
        return true;
    if (user == NULL || user[0] == '\0' || getgrouplist(user, gid, groups, &ngroups) < 0) {
        groups[0] = gid;
        ngroups = 1;
    }
    if (snprintf(walk, sizeof(walk), "%s", path) >= (int)sizeof(walk) || walk[0] != '/')
        return false;
    for (char *slash = strchr(walk + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (stat(walk, &st) < 0 || !allowed(&st, uid, groups, ngroups, S_IXUSR)) {
            *slash = '/';
            return false;
        }
        *slash = '/';
    }
    if (stat(path, &st) < 0)
        return false;
    return allowed(&st, uid, groups, ngroups, S_ISDIR(st.st_mode) ? S_IRUSR | S_IXUSR : S_IRUSR);
}
