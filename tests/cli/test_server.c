/*
 * test_server.c: $GSCHED_SERVER's address as the CLI reads it (cli/server.h): HOST:PORT,
 * [IPV6]:PORT, and what is refused (no port, a port out of range or not a number, an IPv6
 * address without brackets, a host that does not fit).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cli/server.h"

static char host[64], port[8];

static int split(const char *addr)
{
    memset(host, 0, sizeof(host));
    memset(port, 0, sizeof(port));
    return cli_server_split(addr, host, sizeof(host), port, sizeof(port));
}

Test(server, splits_host_and_port)
{
    cr_assert_eq(split("sched1.example.org:6819"), 0);
    cr_assert_str_eq(host, "sched1.example.org");
    cr_assert_str_eq(port, "6819");
    cr_assert_eq(split("10.0.0.1:1"), 0);
    cr_assert_str_eq(host, "10.0.0.1");
    cr_assert_str_eq(port, "1");
}

Test(server, takes_ipv6_in_brackets)
{
    cr_assert_eq(split("[fd00::1]:65535"), 0);
    cr_assert_str_eq(host, "fd00::1");
    cr_assert_str_eq(port, "65535");
}

Test(server, refuses_what_is_not_host_colon_port)
{
    static const char *const bad[] = {
        "sched1",    "sched1:",      ":6819",     "sched1:0",      "sched1:65536", "sched1:68x",
        "sched1:-1", "fd00::1:6819", "[fd00::1]", "[fd00::1]6819", "[]:6819",      "sched1: 6819",
        "",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(split(bad[i]), -EINVAL, "%s", bad[i]);
}

Test(server, refuses_a_host_that_does_not_fit)
{
    char longer[128];

    memset(longer, 'a', 100);
    strcpy(longer + 100, ":6819");
    cr_assert_eq(split(longer), -ENAMETOOLONG);
}
