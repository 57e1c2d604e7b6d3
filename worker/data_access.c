/*
 * data_access.c: whether a job's user may read a dataset's files (data_internal.h). The
 * worker runs as root and copies sources into its cache for jobs; it must not let a job
 * read, through the cache, what its user could not read directly, so it asks the kernel:
 * a short-lived thread takes the user's file-access identity (fsuid, fsgid, groups) and
 * opens the path, so bits, ACLs and the filesystem's own rules judge it as they would the
 * user's own open. Where the worker is not root, the permission bits along the path are
 * checked against the user's uid and groups instead. Any thread (a copy's work function
 * calls it); no state.
 *
 * The cache itself keeps to the same rights: a cached dataset's directory gets the
 * narrowest of "every user", "the manifest's group" and "its owner" that the source's bits
 * grant (wrk_data_source_access), so a dataset only some users may read is not readable,
 * through a node's cache, by the others. The same dataset (the same bytes) added from
 * another source lets that source's readers in too, by a POSIX ACL entry (libacl), so
 * neither source's readers lock the other's out; and a user the source lets in beyond its
 * bits (its ACL) gets an entry of their own (wrk_data_let_user_in).
 */
#define _GNU_SOURCE /* getgrouplist */

#include "worker/data_internal.h"

#include <acl/libacl.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_GROUPS 256
#define NO_GROUP 65534 /* Debian's nogroup */

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

/* By the permission bits alone: the fallback where the worker cannot take the user's
 * identity (it is not root, or the ids are not its to take). */
static bool bits_may_read(const char *path, uid_t uid, const gid_t *groups, int ngroups)
{
    char walk[PATH_MAX];
    struct stat st;

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

/* A check made by a thread of its own that takes the user's file-access identity. */
struct as_user {
    const char *path;
    uid_t uid;
    gid_t gid;
    const gid_t *groups;
    int ngroups;
    int result; /* 1 may read, 0 may not, < 0 the identity could not be taken */
};

/*
 * The thread's body. Credentials are per thread in the kernel: the raw setgroups call and
 * setfsgid/setfsuid change this thread's alone (glibc's setgroups() would change every
 * thread's), and setfsuid away from 0 drops its DAC capabilities, so the open below is
 * judged as the user's own would be: bits, ACL entries and mask, any filesystem's rules.
 * The thread ends after it, so nothing has to be given back.
 */
static void *check_as_user(void *data)
{
    struct as_user *a = data;
    char dot[PATH_MAX];
    struct stat st;
    int fd;

    if (stat(a->path, &st) < 0) {
        a->result = 0;
        return NULL;
    }
    if (syscall(SYS_setgroups, (size_t)a->ngroups, a->groups) < 0) {
        a->result = -errno;
        return NULL;
    }
    setfsgid(a->gid);
    setfsuid(a->uid);
    if ((gid_t)setfsgid((gid_t)-1) != a->gid || (uid_t)setfsuid((uid_t)-1) != a->uid) {
        a->result = -EPERM;
        return NULL;
    }
    /* A directory: searchable (to resolve "." in it) and readable (to open it). */
    if (S_ISDIR(st.st_mode) && snprintf(dot, sizeof(dot), "%s/.", a->path) >= (int)sizeof(dot)) {
        a->result = 0;
        return NULL;
    }
    fd = open(S_ISDIR(st.st_mode) ? dot : a->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
                                                       (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
    a->result = fd >= 0;
    if (fd >= 0)
        close(fd);
    return NULL;
}

bool wrk_data_user_may_read(const char *path, uid_t uid, gid_t gid, const char *user)
{
    gid_t groups[MAX_GROUPS];
    int ngroups = MAX_GROUPS;
    struct as_user a = {path, uid, gid, groups, 0, -EPERM};
    pthread_t t;

    if (uid == 0)
        return true;
    if (user == NULL || user[0] == '\0' || getgrouplist(user, gid, groups, &ngroups) < 0) {
        groups[0] = gid;
        ngroups = gid != (gid_t)-1;
    }
    if (path[0] != '/')
        return false;
    a.ngroups = ngroups;
    if (gid == (gid_t)-1) /* no passwd entry: a group that holds nothing */
        a.gid = NO_GROUP;
    if (geteuid() == 0 && pthread_create(&t, NULL, check_as_user, &a) == 0)
        pthread_join(t, NULL);
    if (a.result >= 0)
        return a.result == 1;
    return bits_may_read(path, uid, groups, ngroups);
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

/*
 * A file's rights as wrk_data_source_access weighs them, each 0-7 (r=4, w=2, x=1): its
 * owner's, its owning group's and others', and with an extended ACL, what every named user
 * entry and every named group entry holds (the mask applied; 7 when there are none), and
 * the entry naming group g (-1: none). The group bits stat(2) shows are the mask then, not
 * the owning group's.
 */
struct perms {
    uid_t uid;
    gid_t gid;
    mode_t owner, group, other;
    mode_t named_users, named_groups;
    int group_g;
};

static mode_t entry_bits(acl_entry_t e)
{
    acl_permset_t ps;

    if (acl_get_permset(e, &ps) < 0)
        return 0;
    return (acl_get_perm(ps, ACL_READ) == 1 ? 4 : 0) | (acl_get_perm(ps, ACL_WRITE) == 1 ? 2 : 0) |
           (acl_get_perm(ps, ACL_EXECUTE) == 1 ? 1 : 0);
}

/* Reads path's perms, its ACL's named entries included. 0 or -errno. */
static int perms_read(const char *path, gid_t g, struct perms *p)
{
    mode_t users = 7, groups = 7, mask = 7;
    struct stat st;
    acl_entry_t e;
    acl_tag_t tag;
    acl_t acl;

    if (stat(path, &st) < 0)
        return -errno;
    *p = (struct perms){
        st.st_uid, st.st_gid, (st.st_mode >> 6) & 7, (st.st_mode >> 3) & 7, st.st_mode & 7, 7,
        7,         -1};
    if ((acl = acl_get_file(path, ACL_TYPE_ACCESS)) == NULL)
        return errno == ENOTSUP || errno == ENODATA ? 0 : -errno; /* no ACLs: the bits */
    for (int w = ACL_FIRST_ENTRY; acl_get_entry(acl, w, &e) == 1; w = ACL_NEXT_ENTRY) {
        if (acl_get_tag_type(e, &tag) < 0)
            continue;
        if (tag == ACL_GROUP_OBJ)
            p->group = entry_bits(e);
        else if (tag == ACL_MASK)
            mask = entry_bits(e);
        else if (tag == ACL_USER)
            users &= entry_bits(e);
        else if (tag == ACL_GROUP) {
            groups &= entry_bits(e);
            if (entry_is(e, ACL_GROUP, g))
                p->group_g = (int)entry_bits(e);
        }
    }
    acl_free(acl);
    p->group &= mask;
    p->named_users = users & mask;
    p->named_groups = groups & mask;
    if (p->group_g >= 0)
        p->group_g &= (int)mask;
    return 0;
}

/*
 * Whether every user holds bit (1 search, 4 read) over p: others, its group, its owner
 * (root passes by itself) and everyone an ACL entry names alike.
 */
static bool all_hold(const struct perms *p, mode_t bit)
{
    return (p->other & p->group & p->named_users & p->named_groups & bit) != 0 &&
           (p->uid == 0 || (p->owner & bit) != 0);
}

/*
 * Whether every member of group g holds bit over p. Its owner and the users an ACL entry
 * names, who may be members, by their own entries. The group class: a member matching any
 * group entry that grants it is let in, so where p is g's, or an entry names g, by that
 * entry; elsewhere a member may be in p's group, in a named one, or in none, so by all of
 * them and others' too.
 */
static bool members_hold(const struct perms *p, gid_t g, mode_t bit)
{
    bool group = p->gid == g       ? (p->group & bit) != 0
                 : p->group_g >= 0 ? ((mode_t)p->group_g & bit) != 0
                                   : (p->group & p->named_groups & p->other & bit) != 0;

    return group && (p->named_users & bit) != 0 && (p->uid == 0 || (p->owner & bit) != 0);
}

/*
 * Whether every directory above path lets its readers search it and path lets them read
 * it: every user (every) or every member of group g. 0 with *ret, or -errno when a stat
 * or an ACL read fails.
 */
static int walk(const char *path, bool every, gid_t g, bool *ret)
{
    char walk_path[PATH_MAX];
    struct perms p;
    int rc;

    *ret = false;
    if (snprintf(walk_path, sizeof(walk_path), "%s", path) >= (int)sizeof(walk_path) ||
        walk_path[0] != '/')
        return -EINVAL;
    for (char *slash = strchr(walk_path + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        rc = perms_read(walk_path, g, &p);
        *slash = '/';
        if (rc < 0)
            return rc;
        if (every ? !all_hold(&p, 1) : !members_hold(&p, g, 1))
            return 0;
    }
    if ((rc = perms_read(path, g, &p)) < 0)
        return rc;
    *ret = every ? all_hold(&p, 4) : members_hold(&p, g, 4);
    return 0;
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
    rc = walk(manifest, true, (gid_t)-1, &ok);
    if (rc == 0 && ok) {
        *ret = (struct wrk_data_access){0, 0, 0755};
        return 0;
    }
    if (rc == 0)
        rc = walk(manifest, false, st.st_gid, &ok);
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

/* Adds a named entry (read and search) for id to dir's ACL unless it has one. */
static int add_reader(const char *dir, acl_tag_t tag, id_t id, bool *ret_changed)
{
    acl_t acl = NULL;
    acl_entry_t e;
    acl_permset_t ps;
    int rc = 0;

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

int wrk_data_let_user_in(const char *dir, uid_t uid, bool *ret_changed)
{
    *ret_changed = false;
    return add_reader(dir, ACL_USER, uid, ret_changed);
}

int wrk_data_widen_access(const char *dir, const struct wrk_data_access *a, bool *ret_changed)
{
    struct stat st;
    acl_tag_t tag;
    id_t id;

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
    return add_reader(dir, tag, id, ret_changed);
}
