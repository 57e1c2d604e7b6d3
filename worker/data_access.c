/*
 * data_access.c: whether a job's user may read a dataset's files (data_internal.h). The
 * worker runs as root and copies sources into its cache for jobs; it must not let a job
 * read, through the cache, what its user could not read directly, so it checks the
 * permission bits along the path against the user's uid and groups before it copies.
 * Pure but for stat(2) and getgrouplist(3); any thread (a copy's work function calls it).
 *
 * The cache itself keeps to the same rights: a cached dataset's directory gets the
 * narrowest of "every user", "the manifest's group" and "its owner" that the source's bits
 * grant (wrk_data_source_access), so a dataset only some users may read is not readable,
 * through a node's cache, by the others. The same dataset (the same bytes) added from
 * another source lets that source's readers in too, by a POSIX ACL entry (libacl), so
 * neither source's readers lock the other's out.
 */
#define _GNU_SOURCE /* getgrouplist */

#include "worker/data_internal.h"

#include <acl/libacl.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/acl.h>
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

/* Whether every directory above path passes dir_ok and path itself passes file_ok, for a
 * reader described by ctx. 0 with *ret, or -errno when a stat fails. */
static int walk(const char *path, bool (*dir_ok)(const struct stat *, const void *),
                bool (*file_ok)(const struct stat *, const void *), const void *ctx, bool *ret)
{
    char walk_path[PATH_MAX];
    struct stat st;

    *ret = false;
    if (snprintf(walk_path, sizeof(walk_path), "%s", path) >= (int)sizeof(walk_path) ||
        walk_path[0] != '/')
        return -EINVAL;
    for (char *slash = strchr(walk_path + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (stat(walk_path, &st) < 0)
            return -errno;
        *slash = '/';
        if (!dir_ok(&st, ctx))
            return 0;
    }
    if (stat(path, &st) < 0)
        return -errno;
    *ret = file_ok(&st, ctx);
    return 0;
}

/* Whether every user holds bit (S_IXOTH or S_IROTH) over st: others, its group's members
 * and its owner alike (root passes by itself). */
static bool all_hold(const struct stat *st, mode_t bit)
{
    mode_t need = bit | bit << 3;

    return (st->st_mode & need) == need && (st->st_uid == 0 || (st->st_mode & bit << 6) != 0);
}

static bool other_may_search(const struct stat *st, const void *ctx)
{
    (void)ctx;
    return all_hold(st, S_IXOTH);
}

static bool other_may_read(const struct stat *st, const void *ctx)
{
    (void)ctx;
    return all_hold(st, S_IROTH);
}

/* Whether every member of group g holds bit over st: by the group's bits where st is g's;
 * elsewhere a member may be in st's group or not, so by both the group's and others'; and
 * its owner, who may be a member, by the owner's. */
static bool members_hold(const struct stat *st, gid_t g, mode_t bit)
{
    bool group = (st->st_mode & bit << 3) != 0, other = (st->st_mode & bit) != 0;

    if (!(st->st_gid == g ? group : group && other))
        return false;
    return st->st_uid == 0 || (st->st_mode & bit << 6) != 0;
}

static bool group_may_search(const struct stat *st, const void *ctx)
{
    return members_hold(st, *(const gid_t *)ctx, S_IXOTH);
}

static bool group_may_read(const struct stat *st, const void *ctx)
{
    return members_hold(st, *(const gid_t *)ctx, S_IROTH);
}

int wrk_data_source_access(const char *manifest, struct wrk_data_access *ret)
{
    struct passwd pw, *found = NULL;
    char pwbuf[4096];
    struct stat st;
    bool ok;
    int rc;

    if (stat(manifest, &st) < 0)
        return -errno;
    rc = walk(manifest, other_may_search, other_may_read, NULL, &ok);
    if (rc == 0 && ok) {
        *ret = (struct wrk_data_access){0, 0, 0755};
        return 0;
    }
    if (rc == 0)
        rc = walk(manifest, group_may_search, group_may_read, &st.st_gid, &ok);
    if (rc == 0 && ok) {
        *ret = (struct wrk_data_access){0, st.st_gid, 0750};
        return 0;
    }
    if (rc < 0)
        return rc;
    /* Its owner, with the owner's own groups: as a job of that user is checked. */
    getpwuid_r(st.st_uid, &pw, pwbuf, sizeof(pwbuf), &found);
    if (wrk_data_user_may_read(manifest, st.st_uid, found != NULL ? found->pw_gid : (gid_t)-1,
                               found != NULL ? found->pw_name : NULL))
        *ret = (struct wrk_data_access){st.st_uid, 0, 0700};
    else
        *ret = (struct wrk_data_access){0, 0, 0700};
    return 0;
}

/* Whether e is the ACL entry of tag for id (a uid or gid). */
static bool entry_is(acl_entry_t e, acl_tag_t tag, id_t id)
{
    acl_tag_t t;
    void *q;
    bool same;

    if (acl_get_tag_type(e, &t) < 0 || t != tag || (q = acl_get_qualifier(e)) == NULL)
        return false;
    same = tag == ACL_USER ? *(uid_t *)q == (uid_t)id : *(gid_t *)q == (gid_t)id;
    acl_free(q);
    return same;
}

/* Whether acl has an entry of tag for id. */
static bool acl_has(acl_t acl, acl_tag_t tag, id_t id)
{
    acl_entry_t e;

    for (int w = ACL_FIRST_ENTRY; acl_get_entry(acl, w, &e) == 1; w = ACL_NEXT_ENTRY) {
        if (entry_is(e, tag, id))
            return true;
    }
    return false;
}

/* Sets dir's ACL to its mode's three entries alone: no named reader stays. */
static int drop_named(const char *dir, mode_t mode)
{
    acl_t acl = acl_from_mode(mode);
    int rc = 0;

    if (acl == NULL)
        return -errno;
    if (acl_set_file(dir, ACL_TYPE_ACCESS, acl) < 0 && errno != ENOTSUP)
        rc = -errno;
    acl_free(acl);
    return rc;
}

int wrk_data_apply_access(const char *dir, const struct wrk_data_access *a)
{
    struct stat st;

    if (stat(dir, &st) < 0)
        return -errno;
    /* Tightened first, so that no moment grants both the old and the new readers. */
    if (chmod(dir, 0700) < 0 || drop_named(dir, 0700) < 0 || chown(dir, a->uid, a->gid) < 0 ||
        chmod(dir, a->mode) < 0)
        return -errno;
    return 0;
}

/* A named entry letting a's readers in: its tag and id; false when a lets in root alone. */
static bool reader_entry(const struct wrk_data_access *a, acl_tag_t *tag, id_t *id)
{
    if ((a->mode & 0050) == 0050) {
        *tag = ACL_GROUP;
        *id = a->gid;
        return true;
    }
    if (a->uid != 0) {
        *tag = ACL_USER;
        *id = a->uid;
        return true;
    }
    return false;
}

int wrk_data_widen_access(const char *dir, const struct wrk_data_access *a, bool *ret_changed)
{
    struct stat st;
    acl_t acl = NULL;
    acl_entry_t e;
    acl_permset_t ps;
    acl_tag_t tag;
    id_t id;
    int rc = 0;

    *ret_changed = false;
    if (stat(dir, &st) < 0)
        return -errno;
    if ((st.st_mode & 0005) == 0005)
        return 0; /* every user may read it already */
    if ((a->mode & 0005) == 0005 || (st.st_uid == 0 && (st.st_mode & 0070) == 0)) {
        /* Public now, or root's alone so far: the new access is the union. */
        *ret_changed = true;
        return wrk_data_apply_access(dir, a);
    }
    if (!reader_entry(a, &tag, &id) ||
        (tag == ACL_GROUP && id == st.st_gid && (st.st_mode & 0050) == 0050) ||
        (tag == ACL_USER && id == st.st_uid))
        return 0; /* nobody new: root alone, or the directory's own group or owner */
    if ((acl = acl_get_file(dir, ACL_TYPE_ACCESS)) == NULL)
        return -errno;
    if (acl_has(acl, tag, id))
        goto out;
    if (acl_create_entry(&acl, &e) < 0 || acl_set_tag_type(e, tag) < 0 ||
        acl_set_qualifier(e, &id) < 0 || acl_get_permset(e, &ps) < 0 || acl_clear_perms(ps) < 0 ||
        acl_add_perm(ps, ACL_READ) < 0 || acl_add_perm(ps, ACL_EXECUTE) < 0 ||
        acl_calc_mask(&acl) < 0 || acl_set_file(dir, ACL_TYPE_ACCESS, acl) < 0) {
        rc = -errno;
        goto out;
    }
    *ret_changed = true;
out:
    acl_free(acl);
    return rc;
}
