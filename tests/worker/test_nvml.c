/*
 * test_nvml.c: the worker's NVML layer against the fake libnvidia-ml.so.1 (tests/common/
 * fake_nvml.c, on LD_LIBRARY_PATH through ctest), scripted per test: every figure read, an
 * unsupported one left unknown, GPUs found by bus id and by index, an Xid delivered once,
 * the script followed as it changes, process lists cut at the array's size, an older
 * library with entry points missing, and no library at all.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry_helpers.h"
#include "worker/nvml.h"

static struct wrk_nvml *nvml;
static struct wrk_nvml_sample samples[4];

static void teardown(void)
{
    wrk_nvml_close(nvml);
    nvml = NULL;
    script_remove();
}

TestSuite(nvml, .fini = teardown, .timeout = 30);

static void open_synthetic(int ngpus)
{
    static const char *const none[] = {"", "", "", ""};

    cr_assert_eq(wrk_nvml_open(NULL, none, ngpus, &nvml), 0);
    cr_assert_eq(wrk_nvml_ngpus(nvml), ngpus);
}

static void sample(void)
{
    cr_assert_eq(wrk_nvml_sample(nvml, samples), 0);
}

static void assert_unknown(const struct wrk_nvml_sample *s)
{
    cr_assert_eq(s->util_pct, -1);
    cr_assert_eq(s->mem_util_pct, -1);
    cr_assert_eq(s->mem_used_mib, 0);
    cr_assert_eq(s->mem_total_mib, 0);
    cr_assert_eq(s->power_w, 0);
    cr_assert_eq(s->temperature_c, -1);
    cr_assert_eq(s->sm_clock_mhz, 0);
    cr_assert_eq(s->throttle_reasons, 0);
    cr_assert_eq(s->ecc_uncorrected, 0);
    cr_assert_eq(s->xid_count, 0);
    cr_assert_eq(s->nprocs, -1);
}

Test(nvml, reads_every_figure_of_a_gpu)
{
    const struct wrk_nvml_sample *s = &samples[1];

    script_create(
        "count 2\n"
        "# GPU 1 is busy, GPU 0 has no line\n"
        "gpu 1 util=73 mem_util=41 mem_used_mib=2048 mem_total_mib=81920 power_w=312 "
        "temp_c=65 sm_clock_mhz=1980 throttle=0x24 ecc=3 xid=79 pids=4242:1024,4343:512\n");
    open_synthetic(2);
    cr_assert_eq(wrk_nvml_found(nvml), 2);
    sample();
    cr_assert(s->found);
    cr_assert_eq(s->util_pct, 73);
    cr_assert_eq(s->mem_util_pct, 41);
    cr_assert_eq(s->mem_used_mib, 2048);
    cr_assert_eq(s->mem_total_mib, 81920);
    cr_assert_eq(s->power_w, 312);
    cr_assert_eq(s->temperature_c, 65);
    cr_assert_eq(s->sm_clock_mhz, 1980);
    cr_assert_eq(s->throttle_reasons, 0x24);
    cr_assert_eq(s->ecc_uncorrected, 3);
    cr_assert_eq(s->xid_last, 79);
    cr_assert_eq(s->xid_count, 1);
    cr_assert_eq(s->nprocs, 2);
    cr_assert_eq(s->procs[0].pid, 4242);
    cr_assert_eq(s->procs[0].memory_mib, 1024);
    cr_assert_eq(s->procs[1].pid, 4343);
    cr_assert_eq(s->procs[1].memory_mib, 512);
    cr_assert(samples[0].found);
    assert_unknown(&samples[0]);
}

Test(nvml, leaves_what_the_gpu_does_not_support_unknown)
{
    script_create("count 1\ngpu 0 mem_util=12 temp_c=40\n");
    open_synthetic(1);
    sample();
    cr_assert_eq(samples[0].mem_util_pct, 12);
    cr_assert_eq(samples[0].temperature_c, 40);
    /* utilisation came as a pair: the SM figure the script left out reads 0 */
    samples[0].mem_util_pct = samples[0].util_pct = -1;
    samples[0].temperature_c = -1;
    assert_unknown(&samples[0]);
}

Test(nvml, finds_gpus_by_bus_id_and_by_index)
{
    static const char *const bus_ids[] = {"0000:19:00.0", "", "0000:42:00.0", "0000:5a:00.0"};

    script_create("count 2\n"
                  "bus=0000:19:00.0 util=11\n"
                  "gpu 1 util=22\n"
                  "gpu 0 util=99\n"
                  "bus=0000:5a:00.0 util=44\n");
    cr_assert_eq(wrk_nvml_open(NULL, bus_ids, 4, &nvml), 0);
    cr_assert_eq(wrk_nvml_found(nvml), 3);
    sample();
    cr_assert_eq(samples[0].util_pct, 11, "by bus id, not as device 0");
    cr_assert_eq(samples[1].util_pct, 22, "by index");
    cr_assert_not(samples[2].found, "no such bus");
    assert_unknown(&samples[2]);
    cr_assert_eq(samples[3].util_pct, 44);
}

Test(nvml, delivers_an_xid_once)
{
    script_create("count 2\ngpu 0 util=1\ngpu 1 util=2 xid=48\n");
    open_synthetic(2);
    sample();
    cr_assert_eq(samples[0].xid_count, 0);
    cr_assert_eq(samples[1].xid_count, 1);
    cr_assert_eq(samples[1].xid_last, 48);
    sample();
    cr_assert_eq(samples[1].xid_count, 0);
    cr_assert_eq(samples[1].xid_last, 0);
    script_write("count 2\ngpu 0 util=1 xid=13\ngpu 1 util=2 xid=48\n");
    sample();
    cr_assert_eq(samples[0].xid_count, 1);
    cr_assert_eq(samples[0].xid_last, 13);
    cr_assert_eq(samples[1].xid_count, 0, "the same line again is not a new Xid");
}

Test(nvml, follows_the_script_as_it_changes)
{
    script_create("count 1\n"
                  "gpu 0 at=0 util=10\n"
                  "gpu 0 at=0 util=20 power_w=100\n"
                  "gpu 0 at=3600 util=90\n");
    open_synthetic(1);
    sample();
    cr_assert_eq(samples[0].util_pct, 20, "the last line whose time has come wins");
    cr_assert_eq(samples[0].power_w, 100);
    script_write("count 1\ngpu 0 util=55\n");
    sample();
    cr_assert_eq(samples[0].util_pct, 55);
    cr_assert_eq(samples[0].power_w, 0, "the new line says nothing of power");
}

Test(nvml, keeps_the_processes_that_fit)
{
    char line[2048];
    size_t len = (size_t)snprintf(line, sizeof(line), "count 1\ngpu 0 pids=");

    for (int i = 0; i < WRK_NVML_MAX_PROCS + 6; i++)
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%d:%d", i > 0 ? "," : "",
                                1000 + i, i);
    snprintf(line + len, sizeof(line) - len, "\n");
    script_create(line);
    open_synthetic(1);
    sample();
    cr_assert_eq(samples[0].nprocs, WRK_NVML_MAX_PROCS);
    for (int i = 0; i < WRK_NVML_MAX_PROCS; i++) {
        cr_assert_eq(samples[0].procs[i].pid, (uint32_t)(1000 + i));
        cr_assert_eq(samples[0].procs[i].memory_mib, (uint64_t)i);
    }
}

Test(nvml, an_empty_process_list_is_known)
{
    script_create("count 1\ngpu 0 pids=\n");
    open_synthetic(1);
    sample();
    cr_assert_eq(samples[0].nprocs, 0);
}

Test(nvml, an_older_library_lacks_entry_points_without_failing)
{
    script_create("count 1\ngpu 0 util=30 power_w=250 throttle=0x4 xid=31\n");
    cr_assert_eq(wrk_nvml_open(FAKE_NVML_OLD, NULL, 1, &nvml), 0);
    sample();
    cr_assert_eq(samples[0].util_pct, 30);
    cr_assert_eq(samples[0].throttle_reasons, 0x4, "through the older name");
    cr_assert_eq(samples[0].power_w, 0, "no power entry point");
    cr_assert_eq(samples[0].xid_count, 0, "no events");
}

Test(nvml, without_a_script_finds_no_device_by_index)
{
    static const char *const bus_ids[] = {"", "0000:19:00.0"};

    unsetenv("GSCHED_FAKE_NVML_SCRIPT");
    cr_assert_eq(wrk_nvml_open(NULL, bus_ids, 2, &nvml), 0);
    cr_assert_eq(wrk_nvml_found(nvml), 1, "only the fixture's bus id");
    sample();
    cr_assert_not(samples[0].found);
    cr_assert(samples[1].found);
    assert_unknown(&samples[1]);
}

Test(nvml, fails_cleanly_without_the_library)
{
    struct wrk_nvml *untouched = (struct wrk_nvml *)&samples;

    cr_assert_eq(wrk_nvml_open("/nonexistent/libnvidia-ml.so.1", NULL, 2, &untouched), -ENOENT);
    cr_assert_eq(untouched, (struct wrk_nvml *)&samples);
    wrk_nvml_close(NULL);
}
