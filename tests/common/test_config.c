/*
 * test_config.c: gsched.toml: defaults for everything, each key read with its unit, and
 * mistakes reported at their place without touching the values already there.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"

static struct gs_config cfg;
static struct gs_buf errors;

static void setup(void)
{
    cr_assert_eq(gs_config_init(&cfg), 0);
    gs_buf_init(&errors);
}

static void teardown(void)
{
    gs_config_release(&cfg);
    gs_buf_release(&errors);
}

TestSuite(config, .init = setup, .fini = teardown);

static int parse(const char *text)
{
    return gs_config_parse(&cfg, text, strlen(text), "gsched.toml", &errors);
}

Test(config, empty_file_keeps_the_defaults)
{
    cr_assert_eq(parse(""), 0);
    cr_assert_str_eq(cfg.host, "127.0.0.1");
    cr_assert_eq(cfg.port, 6817);
    cr_assert_str_eq(cfg.socket_path, "/run/gsched/gschedd.sock");
    cr_assert_eq(cfg.heartbeat_interval_ms, 2000);
    cr_assert_eq(cfg.heartbeat_misses, 3);
    cr_assert_eq(cfg.kill_grace_ms, 30000);
    cr_assert_eq(cfg.log_level, GS_LOG_INFO);
    cr_assert_null(cfg.worker_name);
    cr_assert_eq(cfg.nfeatures, 0);
}

Test(config, reads_every_key)
{
    cr_assert_eq(parse("[scheduler]\nhost = \"10.0.0.1\"\nport = 7000\n"
                       "socket = \"/tmp/g.sock\"\nstate_dir = \"/srv/gsched\"\n"
                       "heartbeat_interval = \"500ms\"\n"),
                 -EINVAL, "ms is not a unit gsched takes");
    gs_buf_reset(&errors);
    cr_assert_eq(parse("[scheduler]\nhost = \"10.0.0.1\"\nport = 7000\n"
                       "socket = \"/tmp/g.sock\"\nstate_dir = \"/srv/gsched\"\n"
                       "heartbeat_interval = \"1s\"\nheartbeat_misses = 5\n"
                       "kill_grace = 10\nlog_level = \"debug\"\n"
                       "[worker]\nname = \"node7\"\naddress = \"10.0.0.7\"\n"
                       "features = [\"h100\", \"ib\"]\ntopology = \"/etc/node.xml\"\n"
                       "gpus = 4\nlog_dir = \"/srv/logs\"\n"),
                 0, "%s", errors.data);
    cr_assert_str_eq(cfg.host, "10.0.0.1");
    cr_assert_eq(cfg.port, 7000);
    cr_assert_str_eq(cfg.socket_path, "/tmp/g.sock");
    cr_assert_str_eq(cfg.state_dir, "/srv/gsched");
    cr_assert_eq(cfg.heartbeat_interval_ms, 1000);
    cr_assert_eq(cfg.heartbeat_misses, 5);
    cr_assert_eq(cfg.kill_grace_ms, 10000, "an integer duration counts seconds here");
    cr_assert_eq(cfg.log_level, GS_LOG_DEBUG);
    cr_assert_str_eq(cfg.worker_name, "node7");
    cr_assert_eq(cfg.nfeatures, 2);
    cr_assert_str_eq(cfg.features[1], "ib");
    cr_assert_null(cfg.features[2]);
    cr_assert_eq(cfg.fake_gpus, 4);
}

Test(config, reports_mistakes_at_their_place_and_keeps_old_values)
{
    cr_assert_eq(parse("[scheduler]\nport = 70000\nheartbeet_misses = 2\n[worker]\ngpus = -1\n"),
                 -EINVAL);
    cr_assert_not_null(
        strstr(errors.data, "gsched.toml:2:8: scheduler.port must be an integer from 0 to 65535"),
        "%s", errors.data);
    cr_assert_not_null(strstr(errors.data, "gsched.toml:3:1: unknown key 'heartbeet_misses' in "
                                           "scheduler (did you mean "
                                           "'scheduler.heartbeat_misses'?)"),
                       "%s", errors.data);
    cr_assert_not_null(strstr(errors.data, "gsched.toml:5:8: worker.gpus must be an integer"), "%s",
                       errors.data);
    cr_assert_eq(cfg.port, 6817);
}

Test(config, load_names_a_missing_file)
{
    cr_assert_eq(gs_config_load(&cfg, "/nonexistent/gsched.toml", &errors), -ENOENT);
    cr_assert_not_null(strstr(errors.data, "/nonexistent/gsched.toml: No such file"));
}

Test(config, load_reads_a_file)
{
    char path[] = "/tmp/gsched-config-XXXXXX";
    int fd = mkstemp(path);
    const char text[] = "[worker]\nfeatures = \"a100\"\n";

    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
    close(fd);
    cr_assert_eq(gs_config_load(&cfg, path, &errors), 0, "%s", errors.data);
    unlink(path);
    cr_assert_eq(cfg.nfeatures, 1);
    cr_assert_str_eq(cfg.features[0], "a100");
}

Test(config, switches_list_their_nodes_as_hostlists)
{
    cr_assert_eq(parse("[[switch]]\nname = \"leaf1\"\nnodes = \"node[1-3]\"\n"
                       "[[switch]]\nname = \"leaf2\"\nnodes = [\"node[4-5]\", \"gpu07\"]\n"),
                 0, "%s", errors.data ? errors.data : "");
    cr_assert_eq(cfg.nswitches, 2);
    cr_assert_str_eq(cfg.switches[0].name, "leaf1");
    cr_assert_eq(cfg.switches[0].nnodes, 3);
    cr_assert_str_eq(cfg.switches[1].nodes[2], "gpu07");
    cr_assert_eq(gs_config_switch_of(&cfg, "node2"), 0);
    cr_assert_eq(gs_config_switch_of(&cfg, "gpu07"), 1);
    cr_assert_eq(gs_config_switch_of(&cfg, "node9"), -1);
}

Test(config, bad_switches_are_reported_at_their_place)
{
    cr_assert_eq(parse("[[switch]]\nname = \"a\"\nnodes = \"n[1-2]\"\n"
                       "[[switch]]\nname = \"b\"\nnodes = \"n[2-3]\"\n"
                       "[[switch]]\nnodes = \"m[3-1]\"\nnmae = \"c\"\n"),
                 -EINVAL);
    cr_assert_not_null(strstr(errors.data, "gsched.toml:6:9: switch.nodes: n2 is under switch 'a'"),
                       "%s", errors.data);
    cr_assert_not_null(strstr(errors.data, "gsched.toml:8:12: switch.nodes: range 3-1 goes down"),
                       "%s", errors.data);
    cr_assert_not_null(strstr(errors.data, "did you mean 'switch.name'"), "%s", errors.data);
    cr_assert_not_null(strstr(errors.data, "switch needs a name"), "%s", errors.data);
}
