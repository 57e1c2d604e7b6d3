/*
 * test_data_access.c: who may read a node's cached copy of a dataset (worker/data_access.c):
 * every user when every user may read the source manifest, the manifest's group when only
 * its members may (directories above included), its owner when only the owner may, and
 * root alone when not even the owner may; then the cache directory given that access.
 * Sources are made in a temporary directory owned by the test's user (and, as root, by
 * other ids too).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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
