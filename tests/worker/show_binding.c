/*
 * show_binding.c: a task for the binding tests (test_launch, test_worker). It prints where
 * the kernel lets it run and allocate, as one line:
 *
 *   cpus=0-1 mempolicy=preferred nodes=0
 *
 * read back with sched_getaffinity and get_mempolicy, so a test checks what the task got
 * rather than what the worker meant to give it. A plain program, not a Criterion test:
 * it is exec'd by the worker like any job's command.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET, syscall */

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NODE_BITS 1024
#define LONG_BITS (8 * (int)sizeof(unsigned long))

/* Prints the members of a set as ranges, "0-3,8", as the kernel's *_list files do. */
static void print_ranges(const char *key, bool (*has)(const void *set, int i), const void *set,
                         int limit)
{
    bool first = true;

    printf("%s=", key);
    for (int i = 0; i < limit; i++) {
        int j = i;

        if (!has(set, i))
            continue;
        while (j + 1 < limit && has(set, j + 1))
            j++;
        if (j > i)
            printf("%s%d-%d", first ? "" : ",", i, j);
        else
            printf("%s%d", first ? "" : ",", i);
        first = false;
        i = j;
    }
}

static bool has_cpu(const void *set, int i)
{
    return CPU_ISSET(i, (const cpu_set_t *)set);
}

static bool has_node(const void *set, int i)
{
    const unsigned long *bits = set;

    return (bits[i / LONG_BITS] >> (i % LONG_BITS)) & 1UL;
}

/* Names from <linux/mempolicy.h>'s MPOL_* modes, lowercase. */
static const char *mode_name(int mode)
{
    static const char *const names[] = {
        "default",        "preferred",          "bind", "interleave", "local",
        "preferred_many", "weighted_interleave"};

    return mode >= 0 && mode < (int)(sizeof(names) / sizeof(names[0])) ? names[mode] : "?";
}

int main(void)
{
    cpu_set_t cpus;
    unsigned long nodes[NODE_BITS / LONG_BITS] = {0};
    int mode = -1;

    if (sched_getaffinity(0, sizeof(cpus), &cpus) < 0) {
        perror("sched_getaffinity");
        return 1;
    }
    /* get_mempolicy reads maxnode - 1 bits, like set_mempolicy. */
    if (syscall(SYS_get_mempolicy, &mode, nodes, (unsigned long)NODE_BITS + 1, NULL, 0UL) < 0) {
        perror("get_mempolicy");
        return 1;
    }
    print_ranges("cpus", has_cpu, &cpus, CPU_SETSIZE);
    printf(" mempolicy=%s ", mode_name(mode));
    print_ranges("nodes", has_node, nodes, NODE_BITS);
    printf("\n");
    return 0;
}
