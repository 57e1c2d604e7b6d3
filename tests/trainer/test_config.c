/*
 * test_config.c: gsched-train's TOML settings: defaults, every section read, mistakes named
 * at FILE:LINE:COL with a suggestion, command-line overrides (TOML values, bare strings,
 * malformed ones), the cross-key checks and data.plan against the environment.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/config.h"

static struct trn_config cfg;
static struct gs_buf errors;

static void setup(void)
{
    trn_config_defaults(&cfg);
    gs_buf_init(&errors);
}

static void teardown(void)
{
    trn_config_release(&cfg);
    gs_buf_release(&errors);
}

TestSuite(trn_config, .init = setup, .fini = teardown);

static int parse(const char *text)
{
    return trn_config_parse(&cfg, text, strlen(text), "train.toml", &errors);
}

static const char *errs(void)
{
    return errors.data != NULL ? errors.data : "";
}

Test(trn_config, defaults_are_the_small_model)
{
    cr_assert_eq(parse(""), 0);
    cr_assert_eq(cfg.layers, 6);
    cr_assert_eq(cfg.heads, 6);
    cr_assert_eq(cfg.channels, 384);
    cr_assert_eq(cfg.context, 256);
    cr_assert_eq(cfg.precision, TRN_PRECISION_FP32);
    cr_assert_eq(cfg.micro, 0, "auto");
    cr_assert_float_eq(cfg.scale_init, 65536.0, 0);
    cr_assert_eq(cfg.scale_interval, 2000);
    cr_assert_float_eq(cfg.scale_backoff, 0.5, 0);
}

Test(trn_config, reads_every_section)
{
    cr_assert_eq(parse("precision = \"bf16\"\nseed = 7\nthreads = 2\nout_dir = \"run1\"\n"
                       "[model]\nlayers = 2\nheads = 4\nchannels = 128\ncontext = 64\n"
                       "vocab = 50257\n"
                       "[data]\ndir = \"shards\"\nseed = 3\nprefetch = 8\n"
                       "[batch]\nglobal_tokens = 8192\nmicro = 16\nmemory = \"2G\"\n"
                       "[optim]\nlr = 3e-4\nmin_lr = 3e-5\nweight_decay = 0.0\nbeta1 = 0.8\n"
                       "beta2 = 0.99\neps = 1e-6\ngrad_clip = 0.5\nwarmup_steps = 10\n"
                       "steps = 200\n"
                       "[loss_scale]\ninit = 1024\ngrowth = 4\nbackoff = 0.25\ninterval = 100\n"
                       "[eval]\nevery = 20\nbatches = 5\n"
                       "[checkpoint]\ndir = \"ck\"\nevery = 50\nkeep = 2\nresume = \"none\"\n"
                       "[metrics]\nfile = \"m.jsonl\"\nplot = \"p.svg\"\npeak_flops = 1e12\n"
                       "log_every = 10\n"),
                 0, "%s", errs());
    cr_assert_eq(cfg.precision, TRN_PRECISION_BF16);
    cr_assert_eq(cfg.seed, 7);
    cr_assert_str_eq(cfg.out_dir, "run1");
    cr_assert_eq(cfg.vocab, 50257);
    cr_assert_str_eq(cfg.data_dir, "shards");
    cr_assert_eq(cfg.prefetch, 8);
    cr_assert_eq(cfg.micro, 16);
    cr_assert_eq(cfg.memory_mib, 2048);
    cr_assert_float_eq(cfg.lr, 3e-4, 1e-12);
    cr_assert_float_eq(cfg.beta2, 0.99, 1e-12);
    cr_assert_eq(cfg.steps, 200);
    cr_assert_float_eq(cfg.scale_growth, 4, 0);
    cr_assert_eq(cfg.eval_every, 20);
    cr_assert_str_eq(cfg.ckpt_dir, "ck");
    cr_assert_str_eq(cfg.resume, "none");
    cr_assert_str_eq(cfg.plot_file, "p.svg");
    cr_assert_float_eq(cfg.peak_flops, 1e12, 1);
    cr_assert_eq(cfg.log_every, 10);
    cr_assert_eq(trn_config_check(&cfg, &errors), 0, "%s", errs());
}

Test(trn_config, micro_auto_and_integers)
{
    cr_assert_eq(parse("[batch]\nmicro = \"auto\"\n"), 0);
    cr_assert_eq(cfg.micro, 0);
    cr_assert_eq(parse("[batch]\nmicro = \"big\"\n"), -EINVAL);
    cr_assert(strstr(errs(), "train.toml:2:9: batch.micro must be \"auto\" or an integer") != NULL,
              "%s", errs());
}

Test(trn_config, mistakes_are_named_at_their_place)
{
    cr_assert_eq(parse("[model]\nlayer = 4\nheads = \"six\"\n[optim]\nlr = -1\n"
                       "[nope]\nx = 1\nprecision = \"fp8\"\n"),
                 -EINVAL);
    cr_assert(strstr(errs(), "train.toml:2:1: unknown key 'layer' in model (did you mean "
                             "'model.layers'?)") != NULL,
              "%s", errs());
    cr_assert(strstr(errs(), "train.toml:3:9: model.heads must be an integer") != NULL, "%s",
              errs());
    cr_assert(strstr(errs(), "train.toml:5:6: optim.lr must be a number from 0 to 10") != NULL,
              "%s", errs());
    cr_assert(strstr(errs(), "train.toml:6:") != NULL, "the unknown section: %s", errs());
}

Test(trn_config, a_syntax_error_is_placed)
{
    cr_assert_eq(parse("[model]\nlayers = = 3\n"), -EINVAL);
    cr_assert(strncmp(errs(), "train.toml:2:", 13) == 0, "%s", errs());
}

Test(trn_config, overrides_take_toml_values_and_bare_strings)
{
    cr_assert_eq(trn_config_override(&cfg, "optim.lr=1e-3", &errors), 0, "%s", errs());
    cr_assert_float_eq(cfg.lr, 1e-3, 1e-15);
    cr_assert_eq(trn_config_override(&cfg, "data.dir=shards/web text", &errors), 0, "%s", errs());
    cr_assert_str_eq(cfg.data_dir, "shards/web text");
    cr_assert_eq(trn_config_override(&cfg, "data.dir=\"quoted\"", &errors), 0, "%s", errs());
    cr_assert_str_eq(cfg.data_dir, "quoted");
    cr_assert_eq(trn_config_override(&cfg, "precision=fp16", &errors), 0, "%s", errs());
    cr_assert_eq(cfg.precision, TRN_PRECISION_FP16);
    cr_assert_eq(trn_config_override(&cfg, "batch.micro=auto", &errors), 0, "%s", errs());
    cr_assert_eq(cfg.micro, 0);
}

Test(trn_config, device_settings)
{
    cr_assert_eq(cfg.device, TRN_DEVICE_AUTO);
    cr_assert(!cfg.tf32 && !cfg.cuda_graph && !cfg.ddp_always);
    cr_assert_eq(parse("device = \"cuda\"\ntf32 = true\ncuda_graph = true\n[ddp]\nalways = true\n"),
                 0, "%s", errs());
    cr_assert_eq(cfg.device, TRN_DEVICE_CUDA);
    cr_assert(cfg.tf32 && cfg.cuda_graph && cfg.ddp_always);
    cr_assert_eq(trn_config_override(&cfg, "device=cpu", &errors), 0, "%s", errs());
    cr_assert_eq(cfg.device, TRN_DEVICE_CPU);
    cr_assert_str_eq(trn_device_name(cfg.device), "cpu");
    cr_assert_eq(trn_config_override(&cfg, "device=gpu", &errors), -EINVAL);
    cr_assert(strstr(errs(), "device must be \"auto\", \"cpu\" or \"cuda\"") != NULL, "%s", errs());
    cr_assert_eq(cfg.device, TRN_DEVICE_CPU, "a bad value changes nothing");
    cr_assert(!cfg.attention_cudnn, "the kernels of our own by default");
    cr_assert_eq(trn_config_override(&cfg, "attention=cudnn", &errors), 0, "%s", errs());
    cr_assert(cfg.attention_cudnn);
    cr_assert_eq(trn_config_override(&cfg, "attention=flash", &errors), -EINVAL);
    cr_assert(strstr(errs(), "attention must be \"own\" or \"cudnn\"") != NULL, "%s", errs());
    cr_assert(cfg.attention_cudnn, "a bad value changes nothing");
    cr_assert_eq(trn_config_override(&cfg, "attention=own", &errors), 0, "%s", errs());
    cr_assert(!cfg.attention_cudnn);
    cr_assert_eq(trn_config_override(&cfg, "precision=fp8", &errors), -EINVAL);
    cr_assert(strstr(errs(), "precision must be \"fp32\", \"bf16\" or \"fp16\"") != NULL, "%s",
              errs());
    cr_assert_eq(trn_config_override(&cfg, "ddp.allreduce=bf16", &errors), 0, "%s", errs());
    cr_assert(cfg.ddp_bf16);
    cr_assert_eq(trn_config_override(&cfg, "ddp.allreduce=fp16", &errors), -EINVAL);
    cr_assert(strstr(errs(), "ddp.allreduce must be \"fp32\" or \"bf16\"") != NULL, "%s", errs());
    cr_assert(cfg.ddp_bf16, "a bad value changes nothing");
}

Test(trn_config, profile_settings)
{
    cr_assert_eq(cfg.profile_steps, 0, "off by default");
    cr_assert_eq(cfg.profile_start, TRN_PROFILE_START_AUTO);
    cr_assert_null(cfg.profile_path);
    cr_assert_eq(parse("[profile]\nsteps = 3\nstart = 0\npath = \"prof/t.json\"\n"), 0, "%s",
                 errs());
    cr_assert_eq(cfg.profile_steps, 3);
    cr_assert_eq(cfg.profile_start, 0, "0 is a step, not auto");
    cr_assert_str_eq(cfg.profile_path, "prof/t.json");
    cr_assert_eq(trn_config_override(&cfg, "profile.steps=2", &errors), 0, "%s", errs());
    cr_assert_eq(cfg.profile_steps, 2);
    cr_assert_eq(trn_config_override(&cfg, "profile.start=auto", &errors), 0, "%s", errs());
    cr_assert_eq(cfg.profile_start, TRN_PROFILE_START_AUTO);
    cr_assert_eq(parse("[profile]\nsteps = -1\nstart = \"later\"\nstep = 2\n"), -EINVAL);
    cr_assert(strstr(errs(), "train.toml:2:9: profile.steps must be an integer from 0 to 100000") !=
                  NULL,
              "%s", errs());
    cr_assert(strstr(errs(), "train.toml:3:9: profile.start must be \"auto\" or an integer from 0 "
                             "to ") != NULL,
              "%s", errs());
    cr_assert(strstr(errs(), "train.toml:4:1: unknown key 'step' in profile (did you mean "
                             "'profile.steps'?)") != NULL,
              "%s", errs());
    cr_assert_eq(cfg.profile_steps, 2, "a bad value changes nothing");
}

Test(trn_config, bad_overrides_name_the_option_and_change_nothing)
{
    cr_assert_eq(trn_config_override(&cfg, "optim.lr=fast", &errors), -EINVAL);
    cr_assert(strstr(errs(), "option --optim.lr:1:") != NULL, "%s", errs());
    cr_assert(strstr(errs(), "optim.lr must be a number") != NULL, "%s", errs());
    cr_assert_float_eq(cfg.lr, 6e-4, 1e-15);
    gs_buf_reset(&errors);
    cr_assert_eq(trn_config_override(&cfg, "optim.lrr=1", &errors), -EINVAL);
    cr_assert(strstr(errs(), "option --optim.lrr:1:7: unknown key 'lrr' in optim") != NULL, "%s",
              errs());
    gs_buf_reset(&errors);
    cr_assert_eq(trn_config_override(&cfg, "optim.lr", &errors), -EINVAL);
    cr_assert(strstr(errs(), "--optim.lr: expected --section.key=value") != NULL, "%s", errs());
    gs_buf_reset(&errors);
    cr_assert_eq(trn_config_override(&cfg, "optim.lr = 1\nseed=2", &errors), -EINVAL);
    cr_assert_eq(trn_config_override(&cfg, "data.dir=a\nseed = 9", &errors), -EINVAL);
    cr_assert(strstr(errs(), "control characters") != NULL, "%s", errs());
    cr_assert_eq(cfg.seed, 1337, "no smuggled key");
    cr_assert_eq(trn_config_override(&cfg, "a..b=1", &errors), -EINVAL);
}

Test(trn_config, cross_key_checks)
{
    cr_assert_eq(parse("[model]\nchannels = 100\nheads = 3\ncontext = 64\n"
                       "[batch]\nglobal_tokens = 1000\n[optim]\nlr = 1e-4\nmin_lr = 1e-3\n"
                       "warmup_steps = 50\nsteps = 10\n"),
                 0, "%s", errs());
    cr_assert_eq(trn_config_check(&cfg, &errors), -EINVAL);
    cr_assert(strstr(errs(), "model.channels (100) must be a multiple of model.heads (3)") != NULL,
              "%s", errs());
    cr_assert(strstr(errs(), "batch.global_tokens (1000) must be a multiple of model.context") !=
                  NULL,
              "%s", errs());
    cr_assert(strstr(errs(), "optim.min_lr") != NULL, "%s", errs());
    cr_assert(strstr(errs(), "optim.warmup_steps (50)") != NULL, "%s", errs());
    cr_assert(strstr(errs(), "data.dir is required") != NULL, "%s", errs());
}

Test(trn_config, the_example_file_reads_and_checks)
{
    cr_assert_eq(trn_config_load(&cfg, GSCHED_EXAMPLES "/train-small.toml", &errors), 0, "%s",
                 errs());
    cr_assert_eq(cfg.layers, 6);
    cr_assert_eq(cfg.micro, 0, "auto");
    cr_assert_eq(trn_config_check(&cfg, &errors), 0, "%s", errs());
}

Test(trn_config, the_demo_model_reads_and_checks)
{
    cr_assert_eq(trn_config_load(&cfg, GSCHED_EXAMPLES "/train-tiny.toml", &errors), 0, "%s",
                 errs());
    cr_assert_eq(cfg.layers, 3);
    cr_assert_eq(trn_config_check(&cfg, &errors), 0, "%s", errs());
}

Test(trn_config, micro_must_divide_the_global_batch)
{
    cr_assert_eq(parse("[data]\ndir = \"d\"\n[model]\ncontext = 64\n"
                       "[batch]\nglobal_tokens = 640\nmicro = 3\n"),
                 0, "%s", errs());
    cr_assert_eq(trn_config_check(&cfg, &errors), -EINVAL);
    cr_assert(strstr(errs(), "batch.micro (3) must divide the global batch of 10 sequences") !=
                  NULL,
              "%s", errs());
}

Test(trn_config, data_plan_follows_the_environment_unless_off)
{
    const char *plan, *dir;

    unsetenv("GSCHED_DATA_PLAN");
    unsetenv("GSCHED_DATA_DIR");
    cr_assert_eq(parse(""), 0);
    cr_expect_eq(cfg.data_plan, TRN_DATA_PLAN_AUTO, "the default");
    cr_expect_eq(trn_config_data_plan_env(&cfg, &plan, &dir), false);
    cr_expect_null(plan);
    setenv("GSCHED_DATA_PLAN", "/run/job.plan", 1);
    setenv("GSCHED_DATA_DIR", "/cache/ds", 1);
    cr_expect_eq(trn_config_data_plan_env(&cfg, &plan, &dir), true);
    cr_expect_str_eq(plan, "/run/job.plan");
    cr_expect_str_eq(dir, "/cache/ds");
    cr_expect_eq(trn_config_check(&cfg, &errors), 0, "no data.dir needed: %s", errs());
    cr_assert_eq(trn_config_override(&cfg, "data.plan=off", &errors), 0, "%s", errs());
    cr_expect_eq(cfg.data_plan, TRN_DATA_PLAN_OFF);
    cr_expect_str_eq(trn_data_plan_name(cfg.data_plan), "off");
    cr_expect_eq(trn_config_data_plan_env(&cfg, &plan, &dir), false);
    cr_expect_eq(trn_config_check(&cfg, &errors), -EINVAL);
    cr_expect(strstr(errs(), "data.dir is required") != NULL, "%s", errs());
    unsetenv("GSCHED_DATA_PLAN");
    unsetenv("GSCHED_DATA_DIR");
    cr_expect_eq(parse("[data]\nplan = \"on\"\n"), -EINVAL);
    cr_expect(strstr(errs(), "train.toml:2:8: data.plan must be \"auto\" or \"off\"") != NULL, "%s",
              errs());
}
