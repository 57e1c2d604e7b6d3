/*
 * test_logs.c: reading chunks of a task's log for `gsched logs`: from an offset or from the
 * end, within the byte limits, with eof exactly when the chunk reaches the end, and with
 * the errno of a file that cannot be read; only the job user's own file, never through a link,
 * and (as root) read with that user's rights.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/logs.h"

static char dir[64], path[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gsched-logs-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/out.txt", dir);
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(logs, .init = setup, .fini = teardown);

/* Writes len bytes of a repeating a..z pattern to the log. */
static void write_log(size_t len)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    for (size_t i = 0; i < len; i++)
        fputc('a' + (int)(i % 26), f);
    fclose(f);
}

Test(logs, reads_from_an_offset_to_the_end)
{
    struct wrk_logs_chunk c;

    write_log(26);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 20, false, 0, &c), 0);
    cr_assert_eq(c.len, 6);
    cr_assert_str_eq(c.data, "uvwxyz");
    cr_assert_eq(c.offset, 20);
    cr_assert_eq(c.size, 26);
    cr_assert(c.eof);
    wrk_logs_chunk_release(&c);
}

Test(logs, stops_at_max_bytes_without_eof)
{
    struct wrk_logs_chunk c;

    write_log(26);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 2, false, 5, &c), 0);
    cr_assert_str_eq(c.data, "cdefg");
    cr_assert_eq(c.offset, 2);
    cr_assert_not(c.eof, "bytes remain after the chunk");
    wrk_logs_chunk_release(&c);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 21, false, 5, &c), 0);
    cr_assert_str_eq(c.data, "vwxyz");
    cr_assert(c.eof, "a chunk ending exactly at the end is eof");
    wrk_logs_chunk_release(&c);
}

Test(logs, from_end_reads_the_tail)
{
    struct wrk_logs_chunk c;

    write_log(26);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 3, true, 0, &c), 0);
    cr_assert_str_eq(c.data, "xyz");
    cr_assert_eq(c.offset, 23);
    cr_assert(c.eof);
    wrk_logs_chunk_release(&c);
}

Test(logs, from_end_further_back_than_the_start_reads_everything)
{
    struct wrk_logs_chunk c;

    write_log(4);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 1000, true, 0, &c), 0);
    cr_assert_str_eq(c.data, "abcd");
    cr_assert_eq(c.offset, 0);
    cr_assert(c.eof);
    wrk_logs_chunk_release(&c);
}

Test(logs, offset_past_the_end_gives_an_empty_chunk_at_the_end)
{
    struct wrk_logs_chunk c;

    write_log(10);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 50, false, 0, &c), 0);
    cr_assert_eq(c.len, 0);
    cr_assert_str_eq(c.data, "");
    cr_assert_eq(c.offset, 10, "clamped, so a follower can tell the file shrank");
    cr_assert_eq(c.size, 10);
    cr_assert(c.eof);
    wrk_logs_chunk_release(&c);
}

Test(logs, empty_file_is_an_empty_eof_chunk)
{
    struct wrk_logs_chunk c;

    write_log(0);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 0, false, 0, &c), 0);
    cr_assert_eq(c.len, 0);
    cr_assert_eq(c.size, 0);
    cr_assert(c.eof);
    wrk_logs_chunk_release(&c);
}

Test(logs, zero_max_bytes_means_64_kib_and_large_requests_are_cut_to_1_mib)
{
    struct wrk_logs_chunk c;

    write_log(2u * 1024u * 1024u);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 0, false, 0, &c), 0);
    cr_assert_eq(c.len, WRK_LOGS_DEFAULT_BYTES);
    cr_assert_eq(c.len, 65536);
    cr_assert_not(c.eof);
    wrk_logs_chunk_release(&c);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 0, false, UINT32_MAX, &c), 0);
    cr_assert_eq(c.len, 1024u * 1024u);
    cr_assert_eq(c.data[27], 'b', "the bytes are the file's");
    cr_assert_not(c.eof);
    wrk_logs_chunk_release(&c);
}

Test(logs, missing_file_is_enoent_and_leaves_the_chunk_alone)
{
    struct wrk_logs_chunk c = {.len = 77};

    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 0, false, 0, &c), -ENOENT);
    cr_assert_eq(c.len, 77, "written only on success");
    cr_assert_null(c.data);
}

Test(logs, refuses_relative_paths_directories_and_fifos)
{
    char fifo[160];
    struct wrk_logs_chunk c;

    cr_assert_eq(wrk_logs_read("out.txt", getuid(), getgid(), 0, false, 0, &c), -EINVAL);
    cr_assert_eq(wrk_logs_read(NULL, getuid(), getgid(), 0, false, 0, &c), -EINVAL);
    cr_assert_eq(wrk_logs_read(dir, getuid(), getgid(), 0, false, 0, &c), -EISDIR);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(wrk_logs_read(fifo, getuid(), getgid(), 0, false, 0, &c), -EINVAL,
                 "and does not block on it");
}

Test(logs, unreadable_file_is_eacces)
{
    struct wrk_logs_chunk c;

    if (geteuid() == 0)
        cr_skip_test("root reads files whatever their mode");
    write_log(3);
    cr_assert_eq(chmod(path, 0), 0);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 0, false, 0, &c), -EACCES);
}

Test(logs, release_accepts_a_zeroed_chunk)
{
    struct wrk_logs_chunk c = {0};

    wrk_logs_chunk_release(&c);
    wrk_logs_chunk_release(&c);
    wrk_logs_chunk_release(NULL);
}

Test(logs, only_the_jobs_users_file_is_read_and_no_link_is_followed)
{
    struct wrk_logs_chunk c = {0};
    char link[sizeof(path) + 8];

    write_log(7);
    cr_assert_eq(wrk_logs_read(path, getuid() + 1, getgid(), 0, false, 0, &c), -EACCES,
                 "a file of another user is refused");
    snprintf(link, sizeof(link), "%s.link", path);
    cr_assert_eq(symlink(path, link), 0);
    cr_assert_eq(wrk_logs_read(link, getuid(), getgid(), 0, false, 0, &c), -ELOOP,
                 "a link at the end of the path is not followed");
    unlink(link);
    cr_assert_eq(wrk_logs_read(path, getuid(), getgid(), 0, false, 0, &c), 0);
    cr_assert_str_eq(c.data, "abcdefg");
    wrk_logs_chunk_release(&c);
}

/* Root reads another user's log as that user: what the user cannot reach (a directory only
 * root may enter, their own file with no read bit) fails as it would for them. */
Test(logs, root_reads_another_users_log_with_that_users_rights)
{
    struct wrk_logs_chunk c = {0};
    const uid_t nobody = 65534;

    if (geteuid() != 0)
        cr_skip_test("only root reads logs for other users");
    write_log(5);
    cr_assert_eq(chown(path, nobody, nobody), 0);
    cr_assert_eq(chmod(path, 0600), 0);
    cr_assert_eq(chmod(dir, 0700), 0);
    cr_assert_eq(wrk_logs_read(path, nobody, nobody, 0, false, 0, &c), -EACCES,
                 "the user cannot enter the directory");
    cr_assert_eq(chmod(dir, 0755), 0);
    cr_assert_eq(wrk_logs_read(path, nobody, nobody, 0, false, 0, &c), 0);
    cr_assert_str_eq(c.data, "abcde");
    cr_assert_eq(c.size, 5);
    cr_assert(c.eof);
    wrk_logs_chunk_release(&c);
    cr_assert_eq(chmod(path, 0), 0);
    cr_assert_eq(wrk_logs_read(path, nobody, nobody, 0, false, 0, &c), -EACCES,
                 "root could read it; its user cannot");
}
