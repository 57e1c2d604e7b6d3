/*
 * test_data_access.c: who may read a node's cached copy of a dataset (worker/data_access.c):
 * every user when every user may read the source manifest, the manifest's group when only
 * its members may (directories above included), its owner when only the owner may, and
 * root alone when not even the owner may; then the cache directory given that access, and
 * widened by an ACL entry when the same dataset comes from another source.
 * Sources are made in a temporary directory owned by the test's user (and, as root, by
 * other ids too).
 */
#include <acl/libacl.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/data_internal.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gsched-access-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(chmod(dir, 0755), 0);
}

static void teardown(void)
{
    char cmd[256];

    snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'", dir, dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(data_access, .init = setup, .fini = teardown);

/* DIR/a (mode a_mode) / b (b_mode) / manifest.toml (file_mode); returns the manifest's path. */
static const char *source(mode_t a_mode, mode_t b_mode, mode_t file_mode)
{
    static char path[128];
    char a[96], b[112];
    FILE *f;

    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", a);
    snprintf(path, sizeof(path), "%s/manifest.toml", b);
    cr_assert_eq(mkdir(a, 0755), 0);
    cr_assert_eq(mkdir(b, 0755), 0);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("# a manifest\n", f);
    fclose(f);
    cr_assert_eq(chmod(path, file_mode), 0);
    cr_assert_eq(chmod(b, b_mode), 0);
    cr_assert_eq(chmod(a, a_mode), 0);
    return path;
}

static void expect_access(const char *manifest, uid_t uid, gid_t gid, mode_t mode)
{
    struct wrk_data_access got;

    cr_assert_eq(wrk_data_source_access(manifest, &got), 0);
    cr_expect_eq(got.uid, uid, "uid %u, want %u", (unsigned)got.uid, (unsigned)uid);
    cr_expect_eq(got.gid, gid, "gid %u, want %u", (unsigned)got.gid, (unsigned)gid);
    cr_expect_eq(got.mode, mode, "mode %03o, want %03o", (unsigned)got.mode, (unsigned)mode);
}

Test(data_access, a_source_every_user_may_read_is_cached_for_everyone)
{
    expect_access(source(0755, 0711, 0644), 0, 0, 0755);
}

Test(data_access, a_source_only_its_group_may_read_is_cached_for_that_group)
{
    expect_access(source(0755, 0750, 0640), 0, getegid(), 0750);
}

Test(data_access, an_upper_directory_closed_to_others_narrows_it_to_the_group)
{
    expect_access(source(0710, 0755, 0644), 0, getegid(), 0750);
}

Test(data_access, a_directory_its_group_may_not_search_leaves_it_to_the_owner)
{
    /* others may search b, its group may not: a member is judged by the group bits */
    expect_access(source(0755, 0701, 0644), getuid(), 0, 0700);
}

Test(data_access, a_source_only_its_owner_may_read_is_cached_for_the_owner)
{
    expect_access(source(0700, 0700, 0600), getuid(), 0, 0700);
}

Test(data_access, a_source_nobody_may_read_is_cached_for_root_alone)
{
    expect_access(source(0755, 0755, 0000), 0, 0, 0700);
}

Test(data_access, a_missing_source_is_an_error)
{
    struct wrk_data_access got;
    char path[96];

    snprintf(path, sizeof(path), "%s/none/manifest.toml", dir);
    cr_assert_eq(wrk_data_source_access(path, &got), -ENOENT);
}

Test(data_access, other_owners_and_groups_as_root)
{
    const char *manifest;
    char a[96];

    if (geteuid() != 0)
        cr_skip_test("needs root to give files to other users");
    manifest = source(0755, 0750, 0640);
    snprintf(a, sizeof(a), "%s/a/b", dir);
    cr_assert_eq(chown(a, 0, 4321), 0);
    cr_assert_eq(chown(manifest, 12345, 4321), 0);
    expect_access(manifest, 0, 4321, 0750);
    cr_assert_eq(chmod(manifest, 0600), 0);
    cr_assert_eq(chmod(a, 0711), 0);
    expect_access(manifest, 12345, 0, 0700); /* uid 12345 has no passwd entry: its bits alone */
}

Test(data_access, the_cache_directory_gets_the_access)
{
    struct wrk_data_access want = {getuid(), getegid(), 0750};
    struct stat st;
    char cached[96];

    snprintf(cached, sizeof(cached), "%s/cached", dir);
    cr_assert_eq(mkdir(cached, 0755), 0);
    cr_assert_eq(chmod(cached, 0755), 0);
    cr_assert_eq(wrk_data_apply_access(cached, &want), 0);
    cr_assert_eq(stat(cached, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0750);
    cr_expect_eq(st.st_uid, want.uid);
    cr_expect_eq(st.st_gid, want.gid);
}

/* path's ACL as text, numeric ids, one entry a line (the caller acl_free()s it). */
static char *acl_text(const char *path)
{
    acl_t acl = acl_get_file(path, ACL_TYPE_ACCESS);
    char *text;

    cr_assert_not_null(acl);
    text = acl_to_any_text(acl, NULL, '\n', TEXT_NUMERIC_IDS);
    cr_assert_not_null(text);
    acl_free(acl);
    return text;
}

static void widen(const char *path, struct wrk_data_access a, bool want_changed)
{
    bool changed = !want_changed;

    cr_assert_eq(wrk_data_widen_access(path, &a, &changed), 0);
    cr_expect_eq(changed, want_changed, "access %u:%u %03o", (unsigned)a.uid, (unsigned)a.gid,
                 (unsigned)a.mode);
}

/* DIR/cached, made 0700 and given access a, as the cache does with a dataset new to it. */
static const char *cache_dir(struct wrk_data_access a)
{
    static char cached[96];

    snprintf(cached, sizeof(cached), "%s/cached", dir);
    cr_assert_eq(mkdir(cached, 0700), 0);
    cr_assert_eq(wrk_data_apply_access(cached, &a), 0);
    return cached;
}

Test(data_access, another_source_of_the_same_dataset_lets_its_readers_in_too)
{
    struct stat st;
    const char *cached;
    char *text;

    if (geteuid() != 0)
        cr_skip_test("needs root to give files to other ids");
    cached = cache_dir((struct wrk_data_access){0, 4321, 0750});
    widen(cached, (struct wrk_data_access){0, 4322, 0750}, true);  /* another group's source */
    widen(cached, (struct wrk_data_access){0, 4322, 0750}, false); /* that one again */
    widen(cached, (struct wrk_data_access){0, 4321, 0750}, false); /* the directory's own */
    widen(cached, (struct wrk_data_access){12345, 0, 0700}, true); /* an owner's own */
    widen(cached, (struct wrk_data_access){0, 0, 0700}, false);    /* root's alone: nobody new */
    text = acl_text(cached);
    cr_expect(strstr(text, "group::r-x") != NULL, "%s", text);
    cr_expect(strstr(text, "group:4322:r-x") != NULL, "%s", text);
    cr_expect(strstr(text, "user:12345:r-x") != NULL, "%s", text);
    cr_expect(strstr(text, "other::---") != NULL, "%s", text);
    acl_free(text);
    cr_assert_eq(stat(cached, &st), 0);
    cr_expect_eq(st.st_gid, 4321, "the first source's group stays the directory's");
    /* A public source: every user, and the named entries go. */
    widen(cached, (struct wrk_data_access){0, 0, 0755}, true);
    text = acl_text(cached);
    cr_expect(strstr(text, "4322") == NULL && strstr(text, "12345") == NULL, "%s", text);
    acl_free(text);
    cr_assert_eq(stat(cached, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0755);
    widen(cached, (struct wrk_data_access){0, 4321, 0750}, false); /* public stays public */
}

Test(data_access, a_copy_that_was_roots_alone_takes_the_new_access)
{
    struct stat st;
    const char *cached;
    char *text;

    if (geteuid() != 0)
        cr_skip_test("needs root to give files to other ids");
    cached = cache_dir((struct wrk_data_access){0, 0, 0700});
    widen(cached, (struct wrk_data_access){0, 4321, 0750}, true);
    cr_assert_eq(stat(cached, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0750);
    cr_expect_eq(st.st_gid, 4321);
    text = acl_text(cached);
    cr_expect(strstr(text, "group::r-x") != NULL && strstr(text, "mask") == NULL, "%s", text);
    acl_free(text);
}

/* Sets path's access ACL from its short text form ("u::rwx,u:4322:r-x,g::---,m::r-x,o::---"). */
static void set_acl(const char *path, const char *text)
{
    acl_t acl = acl_from_text(text);

    cr_assert_not_null(acl, "%s", text);
    cr_assert_eq(acl_set_file(path, ACL_TYPE_ACCESS, acl), 0, "%s on %s", text, path);
    acl_free(acl);
}

Test(data_access, a_user_the_sources_acl_lets_in_may_read_it)
{
    const char *manifest;
    char b[96];

    if (geteuid() != 0)
        cr_skip_test("needs root to take other users' identities");
    /* Owned by 4321 and closed to all others by the bits; 4322 let in by name, the
     * members of group 4400 by theirs. */
    manifest = source(0755, 0700, 0600);
    snprintf(b, sizeof(b), "%s/a/b", dir);
    cr_assert_eq(chown(b, 4321, 4321), 0);
    cr_assert_eq(chown(manifest, 4321, 4321), 0);
    set_acl(b, "u::rwx,u:4322:r-x,g::---,g:4400:r-x,m::r-x,o::---");
    set_acl(manifest, "u::rw-,u:4322:r--,g::---,g:4400:r--,m::r--,o::---");
    cr_expect(wrk_data_user_may_read(manifest, 4322, 4322, NULL), "named in the ACLs");
    cr_expect(wrk_data_user_may_read(b, 4322, 4322, NULL), "the directory too");
    cr_expect(wrk_data_user_may_read(manifest, 4323, 4400, NULL), "a member of group 4400");
    cr_expect(wrk_data_user_may_read(manifest, 4321, 4321, NULL), "its owner");
    cr_expect_not(wrk_data_user_may_read(manifest, 4323, 4323, NULL), "named nowhere");
    /* The mask bounds the named entries. */
    set_acl(manifest, "u::rw-,u:4322:r--,g::---,g:4400:r--,m::---,o::---");
    cr_expect_not(wrk_data_user_may_read(manifest, 4322, 4322, NULL), "masked off");
    cr_expect_not(wrk_data_user_may_read(manifest, 4323, 4400, NULL), "masked off");
    /* And the directory's entry is needed to reach the file. */
    set_acl(manifest, "u::rw-,u:4322:r--,g::---,m::r--,o::---");
    set_acl(b, "u::rwx,g::---,o::---");
    cr_expect_not(wrk_data_user_may_read(manifest, 4322, 4322, NULL), "cannot search b");
    /* The bits still count as they did: a file every user may read, under b opened up. */
    cr_assert_eq(chmod(b, 0755), 0);
    cr_assert_eq(chmod(manifest, 0644), 0);
    cr_expect(wrk_data_user_may_read(manifest, 4323, 4323, NULL));
    cr_expect(wrk_data_user_may_read(manifest, 12345, (gid_t)-1, NULL), "no passwd entry");
}

Test(data_access, a_user_let_in_by_name_gets_an_entry_of_their_own)
{
    struct stat st;
    const char *cached;
    bool changed;
    char *text;

    if (geteuid() != 0)
        cr_skip_test("needs root to give files to other ids");
    cached = cache_dir((struct wrk_data_access){4321, 0, 0700}); /* the source's owner's */
    cr_expect_not(wrk_data_user_may_read(cached, 4322, 4322, NULL));
    cr_assert_eq(wrk_data_let_user_in(cached, 4322, &changed), 0);
    cr_expect(changed);
    cr_expect(wrk_data_user_may_read(cached, 4322, 4322, NULL));
    cr_expect_not(wrk_data_user_may_read(cached, 4323, 4323, NULL), "nobody else");
    cr_assert_eq(wrk_data_let_user_in(cached, 4322, &changed), 0);
    cr_expect_not(changed, "once is enough");
    text = acl_text(cached);
    cr_expect(strstr(text, "user:4322:r-x") != NULL, "%s", text);
    acl_free(text);
    cr_assert_eq(stat(cached, &st), 0);
    cr_expect_eq(st.st_uid, 4321, "the owner stays the source's");
}

Test(data_access, the_sources_acl_weighs_in_its_cached_access)
{
    const char *manifest;
    char b[96];

    if (geteuid() != 0)
        cr_skip_test("needs root to give files to other ids");
    manifest = source(0755, 0755, 0644);
    snprintf(b, sizeof(b), "%s/a/b", dir);
    /* Readable by others, but a named user is refused: not every user's. */
    set_acl(manifest, "u::rw-,u:4322:---,g::r--,m::r--,o::r--");
    expect_access(manifest, 0, 0, 0700);
    /* The bits show the mask (0640), not the owning group's own entry (none). */
    cr_assert_eq(chown(manifest, 0, 4321), 0);
    set_acl(manifest, "u::rw-,u:4322:r--,g::---,m::r--,o::---");
    expect_access(manifest, 0, 0, 0700);
    /* A directory of another group that names 4321: its members pass it. */
    set_acl(manifest, "u::rw-,g::r--,o::---");
    set_acl(b, "u::rwx,g::r-x,g:4321:r-x,m::r-x,o::---");
    expect_access(manifest, 0, 4321, 0750);
    /* One of a third group that others may search lets them in, unless it names a group
     * it denies: a member of 4321 may be in that one too. */
    cr_assert_eq(chown(b, 0, 4500), 0);
    set_acl(b, "u::rwx,g::r-x,o::r-x");
    expect_access(manifest, 0, 4321, 0750);
    set_acl(b, "u::rwx,g::r-x,g:4400:---,m::r-x,o::r-x");
    expect_access(manifest, 0, 0, 0700);
}
