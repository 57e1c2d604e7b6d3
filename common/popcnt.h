/*
 * popcnt.h: GS_POPCNT_CLONES, for the functions that count bits on gschedd's placement path
 * (common/gpuset.c, scheduler/cluster.c). On x86-64 without -mpopcnt (Debian's baseline has
 * no POPCNT, so the build may not ask for it) GCC makes each __builtin_popcountll a call to
 * libgcc's __popcountdi2, some twenty instructions: 18 % of gschedd's time at 10,000 nodes,
 * a third of its instructions at 1,000 (bench/RESULTS.md, "Scheduler scale"). A function
 * marked GS_POPCNT_CLONES is compiled twice, with POPCNT and for the baseline, and the
 * dynamic loader picks one by the CPU (an ifunc, resolved once at start), so the build still
 * runs on every x86-64. A helper gets a clone's POPCNT only where it is inlined into it.
 * Clang expands the builtin inline (no call) and other architectures have their own
 * instruction or expansion: one version there.
 */
#ifndef GS_POPCNT_H
#define GS_POPCNT_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#define GS_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define GS_POPCNT_CLONES
#endif

#endif
