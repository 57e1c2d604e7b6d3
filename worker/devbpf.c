/*
 * devbpf.c: the cgroup v2 device program of a job (see devbpf.h), written as BPF
 * instructions here (a dozen of them: too few to be worth a BPF compiler in the build) and
 * handed to libbpf to load and attach.
 *
 * The program reads bpf_cgroup_dev_ctx: a character device whose major is the GPUs' and
 * whose minor is one of the listed gets 0 (the open fails with EPERM); everything else 1.
 */
#include "worker/devbpf.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One instruction: opcode, registers, offset, immediate. */
static struct bpf_insn insn(__u8 code, __u8 dst, __u8 src, __s16 off, __s32 imm)
{
    struct bpf_insn i = {.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};

    return i;
}

#define LOAD_U32(dst, field)                                                                       \
    insn(BPF_LDX | BPF_MEM | BPF_W, dst, BPF_REG_1, offsetof(struct bpf_cgroup_dev_ctx, field), 0)
#define JUMP_IF(op, reg, value, skip) insn(BPF_JMP | (op) | BPF_K, reg, 0, (__s16)(skip), value)
#define RETURN(value)                                                                              \
    insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, value), insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* The program for n minors into prog (10 + n instructions):
 *   0  r2 = ctx->access_type          5  r4 = ctx->minor
 *   1  r2 &= 0xffff (the type)        6+i if r4 == minor[i] goto deny
 *   2  if r2 != CHAR goto allow       6+n allow: r0 = 1; exit
 *   3  r3 = ctx->major                8+n deny:  r0 = 0; exit
 *   4  if r3 != major goto allow
 * A jump's offset counts from the instruction after it. */
static size_t build(struct bpf_insn *prog, unsigned major, const unsigned *minor, int n)
{
    struct bpf_insn allow[] = {RETURN(1)}, tail[] = {RETURN(1), RETURN(0)};
    size_t k = 0;

    if (n == 0) { /* the verifier refuses unreachable code: no deny branch */
        memcpy(prog, allow, sizeof(allow));
        return 2;
    }
    prog[k++] = LOAD_U32(BPF_REG_2, access_type);
    prog[k++] = insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
    prog[k++] = JUMP_IF(BPF_JNE, BPF_REG_2, BPF_DEVCG_DEV_CHAR, 3 + n);
    prog[k++] = LOAD_U32(BPF_REG_3, major);
    prog[k++] = JUMP_IF(BPF_JNE, BPF_REG_3, (__s32)major, 1 + n);
    prog[k++] = LOAD_U32(BPF_REG_4, minor);
    for (int i = 0; i < n; i++)
        prog[k++] = JUMP_IF(BPF_JEQ, BPF_REG_4, (__s32)minor[i], 1 + n - i);
    memcpy(prog + k, tail, sizeof(tail));
    return k + 4;
}

/* Loads the program for the n minors; its descriptor, or a negative errno with the
 * verifier's log in why. */
static int load(unsigned major, const unsigned *minor, int n, struct gs_buf *why)
{
    char log[4096] = "";
    struct bpf_prog_load_opts opts;
    struct bpf_insn *prog;
    size_t count;
    int fd;

    if (n < 0 || n > WRK_DEVBPF_MAX_DENY) {
        gs_buf_printf(why, "%d device minors, more than the %d one program checks", n,
                      WRK_DEVBPF_MAX_DENY);
        return -E2BIG;
    }
    /* What LIBBPF_OPTS does, written out: its statement expression is a GNU extension
     * that clang's -Wpedantic refuses. sz tells libbpf which fields this caller knows. */
    memset(&opts, 0, sizeof(opts));
    opts.sz = sizeof(opts);
    opts.log_buf = log;
    opts.log_size = sizeof(log);
    prog = calloc((size_t)n + 10, sizeof(*prog));
    if (prog == NULL)
        return -ENOMEM;
    count = build(prog, major, minor, n);
    fd = bpf_prog_load(BPF_PROG_TYPE_CGROUP_DEVICE, "gsched_devices", "GPL", prog, count, &opts);
    if (fd < 0) {
        fd = fd == -1 ? -errno : fd; /* libbpf returns -errno; older ones -1 and errno */
        gs_buf_printf(why, "loading the device program: %s%s%s", strerror(-fd),
                      log[0] != '\0' ? "; verifier: " : "", log);
    }
    free(prog);
    return fd;
}

int wrk_devbpf_probe(struct gs_buf *why)
{
    int fd = load(0, NULL, 0, why);

    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

int wrk_devbpf_deny(int cg_fd, unsigned major, const unsigned *minor, int n, struct gs_buf *why)
{
    int fd, rc = 0;

    if (n == 0)
        return 0;
    fd = load(major, minor, n, why);
    if (fd < 0)
        return fd;
    if (bpf_prog_attach(fd, cg_fd, BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI) < 0) {
        rc = -errno;
        gs_buf_printf(why, "attaching the device program: %s", strerror(errno));
    }
    /* attached, the program is the group's: this descriptor is no longer needed */
    close(fd);
    return rc;
}
