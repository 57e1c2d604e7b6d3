/*
 * devbpf.h: GPU device isolation on cgroup v2. v2 has no devices.deny file; the kernel asks
 * a BPF program of type CGROUP_DEVICE attached to the group instead, on every open or mknod
 * of a device node by a process in it. wrk_devbpf_deny builds one for a job's group that
 * refuses the character devices MAJOR:MINOR of the listed minors (the node's GPUs the job
 * was not given, /dev/nvidiaN) and allows every other device, loads it with libbpf and
 * attaches it to the group; the kernel keeps it there until the group is removed. Slurm's
 * cgroup/v2 plugin does the same.
 *
 * Needs CAP_SYS_ADMIN (a root worker). Loop thread, one short syscall each.
 */
#ifndef WRK_DEVBPF_H
#define WRK_DEVBPF_H

#include "common/buf.h"

#define WRK_DEVBPF_MAX_DENY 1024 /* minors one program checks, one instruction each */

/* Whether this kernel and process can load a device program (loads and drops one that
 * allows everything); 0 or a negative errno with the reason in why. */
int wrk_devbpf_probe(struct gs_buf *why);

/*
 * Attaches to the cgroup v2 directory cg_fd (an O_DIRECTORY descriptor, which the caller
 * keeps) a program refusing char devices major:minor[i] for the n minors, besides other
 * programs already there (BPF_F_ALLOW_MULTI: a device must pass all of them). n 0 attaches
 * nothing. Returns 0, or a negative errno with the kernel verifier's or libbpf's reason in why.
 */
int wrk_devbpf_deny(int cg_fd, unsigned major, const unsigned *minor, int n, struct gs_buf *why);

#endif
