/*
 * fairshare.h: the fair-share tree (sshare), pure: accounts from gsched.toml's [[account]]
 * under an implicit root, each user's association (account, user) made when first seen,
 * usage charged to associations and decayed with a half-life, and each association's
 * fair-share factor, Slurm's classic formula (docs/policy.md):
 *
 *   norm_shares(x)  = shares(x) / shares(x and its siblings) * norm_shares(parent); root 1
 *   norm_usage(x)   = usage(x and below) / usage(everything)
 *   eff_usage(x)    = norm_usage(x) for root's children, else
 *                     norm_usage(x) + (eff_usage(parent) - norm_usage(x)) * shares(x) /
 *                     shares(x and its siblings)
 *   fairshare(x)    = 2^(-eff_usage(x) / norm_shares(x)); 0 when norm_shares is 0
 *
 * A user's association has 1 share among its account's children (Slurm's default); those of
 * the users an account lists exist from the start. Jobs of an account nobody defined are
 * charged to that user under root. The daemon (sched_*.c)
 * and a simulator drive it alike; nothing here reads a clock (now is a parameter).
 */
#ifndef SCHED_FAIRSHARE_H
#define SCHED_FAIRSHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

struct sched_fairshare;

/* One line of the tree, for sshare: an account (user "") or a user's association. */
struct sched_fs_entry {
    const char *account;
    const char *user; /* "" for an account */
    const char *parent;
    uint32_t depth; /* root 0 */
    uint32_t shares;
    double norm_shares, usage, eff_usage, fairshare;
};

/* The tree of cfg's accounts with no usage, decayed as of now_ms; NULL when out of memory. */
struct sched_fairshare *sched_fairshare_new(const struct gs_config *cfg, uint64_t now_ms);
void sched_fairshare_free(struct sched_fairshare *fs);

/*
 * The association of user under account (created when new): account "" or NULL, or one
 * not defined, means root. Returns its index (>= 0) or -ENOMEM.
 */
int sched_fairshare_assoc(struct sched_fairshare *fs, const char *account, const char *user);
/* The same association if it exists, else -ENOENT; creates nothing. */
int sched_fairshare_find(const struct sched_fairshare *fs, const char *account, const char *user);
/* Adds amount (billing-seconds) to the association's usage. */
void sched_fairshare_charge(struct sched_fairshare *fs, int assoc, double amount);
/* Sets the association's usage (loading it back from the store). */
void sched_fairshare_set_usage(struct sched_fairshare *fs, int assoc, double usage);
/* Decays every usage from the last decay to now_ms (no-op for a time not after it). */
void sched_fairshare_decay(struct sched_fairshare *fs, uint64_t now_ms);
/* When the usage was last decayed to. */
uint64_t sched_fairshare_decayed_at(const struct sched_fairshare *fs);
/* Recomputes every factor from the usage now; call before reading factors or entries. */
void sched_fairshare_update(struct sched_fairshare *fs);
/* The association's fair-share factor, 0-1, as of the last update. */
double sched_fairshare_factor(const struct sched_fairshare *fs, int assoc);

/* Lines of the tree in depth-first order, root first; valid until the next assoc. */
size_t sched_fairshare_count(const struct sched_fairshare *fs);
void sched_fairshare_entry(const struct sched_fairshare *fs, size_t i, struct sched_fs_entry *e);

#endif
