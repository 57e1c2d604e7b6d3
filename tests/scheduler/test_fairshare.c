/*
 * test_fairshare.c: the fair-share tree and the multifactor priority, pure: normalised
 * shares down the tree, usage summed up it, Slurm's classic factor 2^(-U/S) with a
 * parent's overuse passed down, decay by the half-life, user associations made on demand
 * (under root for an unknown account), and each priority factor with its weight.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/fairshare.h"
#include "scheduler/priority.h"

static struct gs_config cfg;
static struct gs_config_account accounts[3];
static char *ml_users[] = {"alice", "bob", NULL};

static void setup(void)
{
    cr_assert_eq(gs_config_init(&cfg), 0);
    /* root -> ml (3 shares) -> vision (1); root -> hpc (1). */
    accounts[0] = (struct gs_config_account){
        .name = "ml", .parent = "root", .shares = 3, .users = ml_users, .nusers = 2};
    accounts[1] = (struct gs_config_account){.name = "vision", .parent = "ml", .shares = 1};
    accounts[2] = (struct gs_config_account){.name = "hpc", .parent = "root", .shares = 1};
}

static void teardown(void)
{
    gs_config_release(&cfg);
}

TestSuite(fairshare, .init = setup, .fini = teardown);

/* The tree with the test's accounts (borrowed: cleared before the config is released). */
static struct sched_fairshare *tree(uint64_t half_life_s)
{
    struct gs_config c = cfg;
    struct sched_fairshare *fs;

    c.accounts = accounts;
    c.naccounts = 3;
    c.priority.decay_half_life_s = half_life_s;
    fs = sched_fairshare_new(&c, 1000000);
    cr_assert_not_null(fs);
    return fs;
}

static const struct sched_fs_entry *line(struct sched_fairshare *fs, const char *account,
                                         const char *user)
{
    static struct sched_fs_entry e;

    for (size_t i = 0; i < sched_fairshare_count(fs); i++) {
        sched_fairshare_entry(fs, i, &e);
        if (strcmp(e.account, account) == 0 && strcmp(e.user, user) == 0)
            return &e;
    }
    cr_assert_fail("no line %s/%s", account, user);
    return NULL;
}

Test(fairshare, shares_are_normalised_down_the_tree_in_depth_first_order)
{
    struct sched_fairshare *fs = tree(0);
    int alice = sched_fairshare_assoc(fs, "ml", "alice");
    int carol = sched_fairshare_assoc(fs, "hpc", "carol");
    const char *want[][2] = {{"root", ""},  {"ml", ""},  {"vision", ""},  {"ml", "alice"},
                             {"ml", "bob"}, {"hpc", ""}, {"hpc", "carol"}};
    struct sched_fs_entry e;

    cr_assert_geq(alice, 0);
    cr_assert_eq(sched_fairshare_assoc(fs, "ml", "alice"), alice, "listed: there from the start");
    cr_assert_gt(carol, alice, "not listed: made when first seen");
    sched_fairshare_update(fs);
    cr_assert_eq(sched_fairshare_count(fs), 7);
    for (size_t i = 0; i < 7; i++) {
        sched_fairshare_entry(fs, i, &e);
        cr_assert_str_eq(e.account, want[i][0], "line %zu", i);
        cr_assert_str_eq(e.user, want[i][1], "line %zu", i);
    }
    cr_assert_float_eq(line(fs, "ml", "")->norm_shares, 0.75, 1e-12);
    cr_assert_float_eq(line(fs, "hpc", "")->norm_shares, 0.25, 1e-12);
    /* ml's children: vision, alice and bob (1 share each): a third of ml's 0.75 each. */
    cr_assert_float_eq(line(fs, "vision", "")->norm_shares, 0.25, 1e-12);
    cr_assert_float_eq(line(fs, "ml", "alice")->norm_shares, 0.25, 1e-12);
    cr_assert_float_eq(line(fs, "hpc", "carol")->norm_shares, 0.25, 1e-12);
    cr_assert_eq(line(fs, "vision", "")->depth, 2);
    cr_assert_str_eq(line(fs, "vision", "")->parent, "ml");
    sched_fairshare_free(fs);
}

Test(fairshare, no_usage_anywhere_gives_everyone_the_full_factor)
{
    struct sched_fairshare *fs = tree(0);
    int a = sched_fairshare_assoc(fs, "ml", "alice");

    sched_fairshare_update(fs);
    /* 2^(-0/S) = 1 with no usage anywhere. */
    cr_assert_float_eq(sched_fairshare_factor(fs, a), 1.0, 1e-12);
    sched_fairshare_free(fs);
}

Test(fairshare, usage_lowers_the_factor_and_an_overusing_parent_lowers_its_children)
{
    struct sched_fairshare *fs = tree(0);
    int alice = sched_fairshare_assoc(fs, "ml", "alice");
    int bob = sched_fairshare_assoc(fs, "ml", "bob");
    int carol = sched_fairshare_assoc(fs, "hpc", "carol");
    double fa, fb, fc, ml_eff;

    sched_fairshare_charge(fs, alice, 900);
    sched_fairshare_charge(fs, carol, 100);
    sched_fairshare_update(fs);
    fa = sched_fairshare_factor(fs, alice);
    fb = sched_fairshare_factor(fs, bob);
    fc = sched_fairshare_factor(fs, carol);
    /* ml used 90 % for 75 % of the shares; hpc 10 % for 25 %. */
    cr_assert_float_eq(line(fs, "ml", "")->usage, 900, 1e-9, "an account sums below it");
    cr_assert_float_eq(line(fs, "root", "")->usage, 1000, 1e-9);
    ml_eff = line(fs, "ml", "")->eff_usage;
    cr_assert_float_eq(ml_eff, 0.9, 1e-12, "root's children: their own share of the usage");
    cr_assert_float_eq(line(fs, "ml", "")->fairshare, exp2(-0.9 / 0.75), 1e-12);
    /* alice: 0.9 + (0.9 - 0.9) * 1/3 = 0.9 over 0.25 (1 of ml's 3 children: vision, alice,
     * bob). bob used nothing but inherits a third of ml's overuse: 0 + 0.9 / 3 = 0.3. */
    cr_assert_float_eq(fa, exp2(-0.9 / 0.25), 1e-12);
    cr_assert_float_eq(fb, exp2(-0.3 / 0.25), 1e-12);
    cr_assert_float_eq(fc, exp2(-0.1 / 0.25), 1e-12);
    cr_assert(fc > fb && fb > fa, "the light user of the light account first: %f %f %f", fc, fb,
              fa);
    sched_fairshare_free(fs);
}

Test(fairshare, usage_decays_by_its_half_life)
{
    struct sched_fairshare *fs = tree(3600);
    int a = sched_fairshare_assoc(fs, "hpc", "carol");

    sched_fairshare_charge(fs, a, 800);
    sched_fairshare_decay(fs, 1000000 + 3600 * 1000);
    sched_fairshare_decay(fs, 1000000 + 3600 * 1000); /* the same moment again: no-op */
    sched_fairshare_update(fs);
    cr_assert_float_eq(line(fs, "hpc", "carol")->usage, 400, 1e-9);
    sched_fairshare_decay(fs, 1000000 + 3 * 3600 * 1000);
    sched_fairshare_update(fs);
    cr_assert_float_eq(line(fs, "hpc", "carol")->usage, 100, 1e-9);
    cr_assert_eq(sched_fairshare_decayed_at(fs), 1000000 + 3 * 3600 * 1000);
    sched_fairshare_free(fs);
}

Test(fairshare, associations_keep_their_names_as_the_tree_grows)
{
    struct sched_fairshare *fs = tree(0);
    char user[16];

    /* Far past the first array's room: each new one names its parent's account. */
    for (int i = 0; i < 200; i++) {
        snprintf(user, sizeof(user), "u%d", i);
        cr_assert_geq(sched_fairshare_assoc(fs, "vision", user), 0);
    }
    sched_fairshare_update(fs);
    cr_assert_str_eq(line(fs, "vision", "u199")->parent, "vision");
    cr_assert_str_eq(line(fs, "vision", "u0")->account, "vision");
    cr_assert_eq(sched_fairshare_count(fs), 6 + 200, "root, ml, vision, hpc, alice, bob");
    sched_fairshare_free(fs);
}

Test(fairshare, an_unknown_account_charges_the_user_under_root)
{
    struct sched_fairshare *fs = tree(0);
    int a = sched_fairshare_assoc(fs, "nosuch", "dave");

    cr_assert_eq(sched_fairshare_assoc(fs, "", "dave"), a);
    cr_assert_eq(sched_fairshare_assoc(fs, NULL, "dave"), a);
    sched_fairshare_update(fs);
    cr_assert_str_eq(line(fs, "root", "dave")->parent, "root");
    cr_assert_eq(line(fs, "root", "dave")->depth, 1);
    sched_fairshare_free(fs);
}

/* --- priority -------------------------------------------------------------------------- */

Test(fairshare, multifactor_priority_weighs_each_factor)
{
    struct gs_jobspec spec = {.nodes = 2, .gpus_per_node = 4, .nice = 50};
    struct sched_prio_cluster cl = {.gpus = 32, .cores = 256};
    struct sched_prio p;

    cfg.priority = (struct gs_config_priority){.multifactor = true,
                                               .weight_age = 1000,
                                               .weight_fairshare = 10000,
                                               .weight_job_size = 800,
                                               .weight_partition = 100,
                                               .max_age_s = 100};
    cfg.partitions[0].priority_job_factor = 1;
    /* Submitted 25 s ago: age 0.25; 8 of 32 GPUs: size 0.25; fair share 0.5. */
    sched_priority(&cfg, &spec, 5000, 30000, 0.5, &cl, &p);
    cr_assert_float_eq(p.age, 250, 1e-9);
    cr_assert_float_eq(p.fairshare, 5000, 1e-9);
    cr_assert_float_eq(p.job_size, 200, 1e-9);
    cr_assert_float_eq(p.partition, 100, 1e-9, "the only partition has the largest factor");
    cr_assert_eq(p.nice, 50);
    cr_assert_eq(p.priority, 250 + 5000 + 200 + 100 - 50);
    cr_assert_not(p.admin_set);
    /* Older than max_age: the age factor stays 1; favor_small turns the size round. */
    cfg.priority.favor_small = true;
    sched_priority(&cfg, &spec, 0, 500000, 0.5, &cl, &p);
    cr_assert_float_eq(p.age, 1000, 1e-9);
    cr_assert_float_eq(p.job_size, 600, 1e-9);
}

Test(fairshare, without_weights_nice_alone_orders_and_root_set_priority_wins)
{
    struct gs_jobspec spec = {.nodes = 1, .nice = 7};
    struct sched_prio_cluster cl = {.gpus = 8, .cores = 64};
    struct sched_prio p;

    sched_priority(&cfg, &spec, 0, 1000000, 1.0, &cl, &p);
    cr_assert_eq(p.priority, -7, "no [priority] weights: 0 - nice");
    cr_assert_float_eq(p.fairshare, 0, 1e-12);
    spec.priority = 300;
    sched_priority(&cfg, &spec, 0, 1000000, 1.0, &cl, &p);
    cr_assert(p.admin_set);
    cr_assert_eq(p.priority, 300, "set by root: nice and factors do not apply");
    cr_assert_float_eq(sched_billing_rate(&(struct gs_config_priority){.billing_cpu = 1,
                                                                       .billing_gpu = 10,
                                                                       .billing_mem_gib = 0.5},
                                          2, 16, 4096),
                       20 + 16 + 2, 1e-12);
}
