/*
 * local_netns.h: `gsched up --netns`, a local cluster wired like several hosts (cli/cmd_up.c).
 * gschedd and each worker run in a network namespace of their own, behind a veth pair on
 * one Linux bridge in this machine's namespace, and in UTS and mount namespaces of their
 * own: each has its host name (gschedd "gschedd", worker I "nodeI") and sees DIR/hosts as
 * its /etc/hosts, which names every node's address, as a real cluster's DNS would. Tasks
 * are the worker's children, so a task on node2 sees node2's host name and address, and
 * two nodes may listen on one port.
 *
 *     DIR/netns      "tag TAG\nsubnet A.B.C\nworkers N\n": what `up` made, for `down`
 *                    and for a gschedd started again; removed once all of it is gone
 *     DIR/hosts      the cluster's /etc/hosts (mode 0644: jobs of every user read it)
 *
 * Names carry TAG, six hex digits of the state directory's path, so that clusters side by
 * side do not meet: namespaces gsched-TAG-sched and gsched-TAG-nodeI (`ip netns`, under
 * /run/netns), the bridge gsTAGbr (address A.B.C.254, so this machine reaches every node)
 * and the bridge-side veths gsTAGhI (0: gschedd). gschedd is A.B.C.1, node I A.B.C.(10+I).
 * The links are made and removed with iproute2's `ip`; root only.
 *
 * Single-threaded; struct cli_netns is caller-owned storage with nothing to free.
 */
#ifndef GS_CLI_LOCAL_NETNS_H
#define GS_CLI_LOCAL_NETNS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli/local.h"

#define CLI_NETNS_FILE "netns"
#define CLI_NETNS_HOSTS "hosts"
#define CLI_NETNS_SCHED_PORT 6817u /* gschedd's port inside its namespace: Slurm's */

struct cli_netns {
    char tag[8];      /* six hex digits */
    unsigned net[3];  /* the /24: net[0].net[1].net[2].0 */
    unsigned workers; /* nodes 1..workers */
    char ip[PATH_MAX];
    char hosts[PATH_MAX];
};

/*
 * What entering daemon i's namespaces needs (0: gschedd), made before fork so that the
 * child only makes system calls: the namespace's path and the host name.
 */
struct cli_netns_enter {
    char path[PATH_MAX];
    char hostname[16];
    const char *hosts;
};

/*
 * Chooses the names and a free /24 for l's cluster of `workers` nodes: subnet "A.B.C" when
 * given, else one in 10.100-199.x derived from the tag that no address of this machine is
 * in. Checks that this process is root and finds `ip`. Returns 0, or prints why not and
 * returns < 0.
 */
int cli_netns_plan(struct cli_netns *n, const struct cli_local *l, unsigned workers,
                   const char *subnet);

/*
 * Makes the namespaces, the bridge and the links of n and writes DIR/hosts and DIR/netns.
 * On failure removes whatever it made. Returns 0, or prints why not and returns < 0.
 */
int cli_netns_create(struct cli_netns *n, const struct cli_local *l);

/* Reads DIR/netns into n. Returns 0, -ENOENT when l's cluster has no namespaces, or
 * another < 0 (printed) when the file is damaged. */
int cli_netns_load(struct cli_netns *n, const struct cli_local *l);

/*
 * Removes n's namespaces, links and bridge, after killing every process still inside one
 * (the daemons are stopped first, by the caller; this catches their leftovers), then
 * DIR/netns. Whatever is already gone is skipped. Returns 0, or prints what is left and
 * returns < 0.
 */
int cli_netns_destroy(const struct cli_netns *n, const struct cli_local *l);

/* Daemon i's address ("A.B.C.D", i 0 is gschedd) into out. */
void cli_netns_addr(const struct cli_netns *n, unsigned i, char *out, size_t size);

/* Fills e for daemon i of n. */
void cli_netns_prepare_enter(const struct cli_netns *n, unsigned i, struct cli_netns_enter *e);

/*
 * In a forked child, before exec: joins e's network namespace, takes UTS and mount
 * namespaces of its own (mounts not propagated back), sets the host name and bind-mounts
 * e->hosts over /etc/hosts. Async-signal-safe. Returns 0 or -errno.
 */
int cli_netns_enter(const struct cli_netns_enter *e);

#endif
