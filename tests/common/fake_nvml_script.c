/*
 * fake_nvml_script.c: the fake NVML's GPU figures, from the file named by the environment
 * variable GSCHED_FAKE_NVML_SCRIPT (fake_nvml.c answers the entry points from here).
 * Without the variable, or without the file, there is no device to index and every figure
 * is NOT_SUPPORTED, which is what test_topo_nvml expects.
 *
 * The file is read again at every call, so a test changes the load while a worker runs by
 * writing a new file and renaming it over the old one. One directive per line, `#` starts
 * a comment:
 *
 *   count N
 *       nvmlDeviceGetCount_v2; nvmlDeviceGetHandleByIndex_v2 finds devices 0..N-1 (gsched's
 *       synthetic GPU i is NVML device i).
 *   gpu I [at=SECONDS] [util=P] [mem_util=P] [mem_used_mib=M] [mem_total_mib=M] [power_w=W]
 *         [temp_c=C] [sm_clock_mhz=F] [throttle=0xHEX] [ecc=N] [xid=N] [pids=PID:MIB,...]
 *   bus=DDDD:BB:DD.F [at=SECONDS] ...the same keys...
 *       The state of NVML device I (found by index), or of the device found by that PCI bus
 *       id (its bus number counts), from SECONDS after the first nvmlInit_v2 (default 0; a
 *       fraction is fine). For each device the last line whose time has come is in force.
 *       A figure the line does not set is NOT_SUPPORTED; so is everything of a device no
 *       line is in force for. utilisation answers when util or mem_util is set (the other
 *       reads 0), memory info when mem_total_mib is. `pids=` with nothing after it is an
 *       empty process list; more than 64 processes exceed gsched's array (INSUFFICIENT_SIZE).
 *       xid=N: one critical-Xid event N, delivered through the event set the first time the
 *       line is in force when the set is read, and never again for a line of the same text.
 *
 * A line it cannot read is reported on stderr and skipped.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_nvml.h"

#define MAX_LINES 64
#define MAX_DELIVERED 256

static struct fake_state lines[MAX_LINES];
static int nlines;
static unsigned device_count;
static struct timespec started;
static bool clock_started;
static uint64_t delivered[MAX_DELIVERED]; /* text hashes of lines whose Xid went out */
static int ndelivered;

/* key=value settings of a line: the field bit, the value's type and where it goes. */
static const struct {
    const char *key;
    unsigned field;
    char type; /* 'u' unsigned, 'U' unsigned long long, 'i' int */
    size_t offset;
} keys[] = {
    {"util", FAKE_UTIL, 'u', offsetof(struct fake_state, util)},
    {"mem_util", FAKE_MEM_UTIL, 'u', offsetof(struct fake_state, mem_util)},
    {"mem_used_mib", FAKE_MEM_USED, 'U', offsetof(struct fake_state, mem_used_mib)},
    {"mem_total_mib", FAKE_MEM_TOTAL, 'U', offsetof(struct fake_state, mem_total_mib)},
    {"power_w", FAKE_POWER, 'u', offsetof(struct fake_state, power_w)},
    {"temp_c", FAKE_TEMP, 'i', offsetof(struct fake_state, temp_c)},
    {"sm_clock_mhz", FAKE_CLOCK, 'u', offsetof(struct fake_state, sm_clock_mhz)},
    {"throttle", FAKE_THROTTLE, 'U', offsetof(struct fake_state, throttle)},
    {"ecc", FAKE_ECC, 'U', offsetof(struct fake_state, ecc)},
    {"xid", FAKE_XID, 'u', offsetof(struct fake_state, xid)},
};

void fake_script_start_clock(void)
{
    if (!clock_started && clock_gettime(CLOCK_MONOTONIC, &started) == 0)
        clock_started = true;
}

static double elapsed_s(void)
{
    struct timespec now;

    if (!clock_started || clock_gettime(CLOCK_MONOTONIC, &now) < 0)
        return 0;
    return (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) / 1e9;
}

/* FNV-1a. */
static uint64_t hash_text(const char *text)
{
    uint64_t h = 14695981039346656037ull;

    for (; *text != '\0'; text++)
        h = (h ^ (unsigned char)*text) * 1099511628211ull;
    return h;
}

static bool parse_pids(char *value, struct fake_state *st)
{
    char *save = NULL;

    st->fields |= FAKE_PIDS;
    st->nprocs = 0;
    for (char *item = strtok_r(value, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        struct fake_proc *p = &st->procs[st->nprocs];

        if (st->nprocs == FAKE_MAX_PIDS || sscanf(item, "%u:%llu", &p->pid, &p->memory_mib) != 2)
            return false;
        st->nprocs++;
    }
    return true;
}

static bool parse_setting(struct fake_state *st, const char *key, char *value)
{
    char *end;

    if (strcmp(key, "at") == 0) {
        st->at = strtod(value, &end);
        return end != value && *end == '\0' && st->at >= 0;
    }
    if (strcmp(key, "pids") == 0)
        return parse_pids(value, st);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char *slot = (char *)st + keys[i].offset;
        unsigned long long ull = strtoull(value, &end, 0);
        unsigned u = (unsigned)ull;
        int si = (int)strtol(value, NULL, 0);

        if (strcmp(key, keys[i].key) != 0)
            continue;
        if (end == value || *end != '\0')
            return false;
        if (keys[i].type == 'U')
            memcpy(slot, &ull, sizeof(ull));
        else if (keys[i].type == 'i')
            memcpy(slot, &si, sizeof(si));
        else
            memcpy(slot, &u, sizeof(u));
        st->fields |= keys[i].field;
        return true;
    }
    return false;
}

/* `gpu I ...` or `bus=... ...` into st; false when it is neither or a setting is bad. */
static bool parse_state(char *text, struct fake_state *st)
{
    char *save = NULL, *tok = strtok_r(text, " \t", &save), *end;
    unsigned domain, bus, dev, fn;

    memset(st, 0, sizeof(*st));
    if (tok != NULL && strcmp(tok, "gpu") == 0) {
        tok = strtok_r(NULL, " \t", &save);
        if (tok == NULL)
            return false;
        st->index = (unsigned)strtoul(tok, &end, 10);
        if (end == tok || *end != '\0')
            return false;
    } else if (tok != NULL && sscanf(tok, "bus=%x:%x:%x.%x", &domain, &bus, &dev, &fn) == 4) {
        st->by_bus = true;
        st->bus = bus;
    } else {
        return false;
    }
    while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
        char *eq = strchr(tok, '=');

        if (eq == NULL)
            return false;
        *eq = '\0';
        if (!parse_setting(st, tok, eq + 1))
            return false;
    }
    return true;
}

/* One line of the script, comment and newline already cut off. */
static void read_line(const char *path, char *text)
{
    uint64_t h = hash_text(text);
    char *end;

    text += strspn(text, " \t");
    if (*text == '\0')
        return;
    if (strncmp(text, "count ", 6) == 0) {
        device_count = (unsigned)strtoul(text + 6, &end, 10);
        return;
    }
    if (nlines < MAX_LINES && parse_state(text, &lines[nlines])) {
        lines[nlines++].text_hash = h;
        return;
    }
    fprintf(stderr, "fake_nvml: %s: line skipped (unreadable, or more than %d)\n", path, MAX_LINES);
}

/* The script as it is now on disk; nothing when there is none. */
static void reload(void)
{
    const char *path = getenv("GSCHED_FAKE_NVML_SCRIPT");
    FILE *f = path != NULL ? fopen(path, "r") : NULL;
    char *text = NULL;
    size_t cap = 0;

    nlines = 0;
    device_count = 0;
    if (f == NULL)
        return;
    while (getline(&text, &cap, f) > 0) {
        text[strcspn(text, "#\r\n")] = '\0';
        read_line(path, text);
    }
    free(text);
    fclose(f);
}

unsigned fake_script_count(void)
{
    reload();
    return device_count;
}

bool fake_script_names_bus(unsigned bus)
{
    reload();
    for (int i = 0; i < nlines; i++)
        if (lines[i].by_bus && lines[i].bus == bus)
            return true;
    return false;
}

static bool is_device(const struct fake_state *st, uintptr_t handle)
{
    if (handle >= FAKE_NVML_BY_INDEX)
        return !st->by_bus && st->index == handle - FAKE_NVML_BY_INDEX;
    return st->by_bus && st->bus + 1 == handle;
}

const struct fake_state *fake_script_current(nvml_device_t device)
{
    const struct fake_state *found = NULL;
    double now = elapsed_s();

    reload();
    for (int i = 0; i < nlines; i++)
        if (is_device(&lines[i], (uintptr_t)device) && lines[i].at <= now)
            found = &lines[i];
    return found;
}

bool fake_script_take_xid(const struct fake_state *state)
{
    if ((state->fields & FAKE_XID) == 0 || ndelivered == MAX_DELIVERED)
        return false;
    for (int i = 0; i < ndelivered; i++)
        if (delivered[i] == state->text_hash)
            return false;
    delivered[ndelivered++] = state->text_hash;
    return true;
}
