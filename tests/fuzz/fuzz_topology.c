/*
 * fuzz_topology.c: libFuzzer harness for hwloc XML topologies loaded through common/topo.h
 * (`gsched-workerd --topology FILE`, gsched.toml's worker.topology).
 *
 * gs_topo_load() takes a path, not a buffer, so each input is written to one temporary
 * file (made at the first input, removed at exit) and loaded from there: hwloc's own XML
 * reader does the parsing, and gsched's code turns its tree into GPUs, NICs, cores and PCI
 * paths. A loaded topology is then asked everything placement asks: every GPU pair's link,
 * every GPU's link to every NIC and its nearest NIC, each core and NUMA node.
 *
 * hwloc is not instrumented, so coverage guides the fuzzer only through gsched's side; hwloc
 * prints its own complaints about bad XML to stderr unless HWLOC_HIDE_ERRORS is set, which
 * the first call does. The ctest run caps inputs at 64 KiB (-max_len).
 *
 * hwloc 2.9.0 (Debian 12) itself dereferences NULL in hwloc_topology_load() when an object has
 * a cpuset but no complete_cpuset, or a nodeset but no complete_nodeset (hwloc-crashes/ holds
 * such files, each a one-letter typo of ws-4gpu.xml). That is hwloc's bug, not gsched's:
 * gs_topo_load survives it by loading the file in a child process first (common/topo_trial.c),
 * but that child is a fork of this fuzzer, whose crash handlers would record the child's crash
 * as the run's. The fuzzer finds such files within a few hundred inputs, so inputs with an
 * object that has one of a pair without the other are skipped here (screened_out); so are sets
 * that are not whole bitmaps (",x01" fails an assert() in hwloc_bitmap_sscanf; a Machine's
 * complete_cpuset of "0xfffno_fffff" is read as empty, and the load crashes), a NUMA node
 * without a cpuset (however its type is spelled), and a DOCTYPE without a system id (its
 * libxml2 plugin passes the missing id to strcmp); anything else that crashes inside hwloc is
 * still reported. Also screened, for speed: PUs and NUMA nodes without an os_index below a
 * million (hwloc clears a bitmap that long, 512 MB for a missing one), and distance matrices
 * of more than 4096 objects (nbobjs_large). hwloc 2.9.0 and its libxml2 plugin also leak on
 * some XML files they reject, from their own allocations, which hwloc_topology_destroy() does
 * not free: LeakSanitizer is told to pass over leaks whose stack holds libhwloc, its XML
 * plugin or libxml2 (__lsan_default_suppressions). For those stacks to be named, the plugin
 * must stay loaded: hwloc unloads its plugins with the last topology, so the harness keeps one
 * empty topology for its whole run (plugin_anchor). A leak of gsched's own structures is still
 * caught; a topology gsched forgot to destroy would be hidden (its allocations are hwloc's),
 * which topo.c's single exit path makes unlikely.
 *
 * The trial load itself (topo_trial.c: a fork per file) is replaced here by
 * topo_trial_load_xml below, which the link takes instead of gs_topo's: the inputs it guards
 * against are screened out, and a fork of this process per input was most of the harness's
 * cost (about 250 inputs a second once the corpus held 15 KB files).
 */
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <hwloc.h>

#include "common/topo.h"
#include "common/topo_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* gs_topo's trial load, as a no-op: see the top. An object file's definition goes before a
 * static library's, so topo_trial.o is never linked into this harness. */
int topo_trial_load_xml(const char *path, struct gs_error *err)
{
    (void)path;
    (void)err;
    return 0;
}

const char *__lsan_default_suppressions(void);

/* Read by LeakSanitizer at start: leaks from inside hwloc and libxml2 are theirs. */
const char *__lsan_default_suppressions(void)
{
    return "leak:libhwloc.so\nleak:hwloc_xml_libxml.so\nleak:libxml2.so\n";
}

static char xml_path[] = "/tmp/gsched-fuzz-topo.XXXXXX";
static int xml_fd = -1;
static hwloc_topology_t plugin_anchor; /* keeps hwloc's plugins loaded: see the top */

static void remove_xml(void)
{
    unlink(xml_path);
}

/* Replaces the temporary file's contents by data. Returns 0 or -1. */
static int write_xml(const uint8_t *data, size_t size)
{
    if (xml_fd < 0) {
        setenv("HWLOC_HIDE_ERRORS", "2", 0);
        if (hwloc_topology_init(&plugin_anchor) < 0)
            return -1;
        xml_fd = mkstemp(xml_path);
        if (xml_fd < 0)
            return -1;
        atexit(remove_xml);
    }
    if (ftruncate(xml_fd, 0) < 0)
        return -1;
    return pwrite(xml_fd, data, size, 0) == (ssize_t)size ? 0 : -1;
}

/*
 * Where word next starts in text[from..len), or len. memcmp is tried only where the first
 * byte matches: libFuzzer hooks every memcmp (to learn the bytes compared), and one call per
 * byte of a 15 KB input took a third of the harness's time.
 */
static size_t find(const char *text, size_t from, size_t len, const char *word)
{
    size_t wlen = strlen(word);

    for (size_t i = from; i + wlen <= len; i++) {
        const char *p = memchr(text + i, word[0], len - wlen + 1 - i);

        if (p == NULL)
            break;
        i = (size_t)(p - text);
        if (memcmp(p, word, wlen) == 0)
            return i;
    }
    return len;
}

/* Whether text[0..len) holds word. */
static bool contains(const char *text, size_t len, const char *word)
{
    return find(text, 0, len, word) < len;
}

/*
 * Whether value[0..len) is a bitmap as hwloc writes one: optionally "0xf...f" (infinite),
 * then 32-bit chunks "0x" + hex digits, separated by commas. hwloc_bitmap_sscanf() empties
 * a set it cannot read to the end, and a Machine whose complete_cpuset came out empty that
 * way crashed hwloc_topology_load (hwloc-crashes/machine-complete-cpuset-not-hex.xml).
 */
static bool bitmap_ok(const char *value, size_t len)
{
    size_t i = 0;

    if (len >= 7 && memcmp(value, "0xf...f", 7) == 0) {
        if (len == 7)
            return true;
        if (value[7] != ',')
            return false;
        i = 8;
    }
    for (;;) {
        size_t digits = 0;

        if (i + 2 > len || value[i] != '0' || value[i + 1] != 'x')
            return false;
        for (i += 2; i < len && isxdigit((unsigned char)value[i]); i++)
            digits++;
        if (digits == 0)
            return false;
        if (i == len)
            return true;
        if (value[i++] != ',')
            return false;
    }
}

/* Whether some set="..." attribute of the tag is not a bitmap hwloc reads whole. */
static bool set_not_bitmap(const char *tag, size_t len)
{
    for (size_t i = find(tag, 0, len, "set=\""); i < len; i = find(tag, i + 1, len, "set=\"")) {
        const char *value = tag + i + 5, *quote = memchr(value, '"', len - (i + 5));

        if (quote == NULL || !bitmap_ok(value, (size_t)(quote - value)))
            return true;
    }
    return false;
}

/*
 * Whether the tag is a PU or NUMA node whose os_index is missing or not a number below a
 * million. hwloc sets that bit in the object's set, so os_index="4294967295" (or none:
 * HWLOC_UNKNOWN_INDEX) has it clear 512 MB, about a second per input, and the inputs
 * that did so were a large part of the run's time. gs_topo_load refuses those past
 * INT_MAX (test_topo checks it).
 */
static bool os_index_slow(const char *tag, size_t len)
{
    size_t at, digits = 0;

    if (!contains(tag, len, "type=\"PU\"") && !contains(tag, len, "type=\"NUMANode\""))
        return false;
    at = find(tag, 0, len, " os_index=\"");
    if (at == len)
        return true;
    for (at += 11; at < len && tag[at] >= '0' && tag[at] <= '9'; at++)
        digits++;
    return at == len || tag[at] != '"' || digits == 0 || digits > 6;
}

/*
 * Whether the tag has an nbobjs (a distance matrix's size) that is not a plain number up to
 * 4096. hwloc 2.9.0 allocates its arrays from nbobjs (nbobjs^2 * 8 bytes for the values)
 * before it reads a single entry: nbobjs="4222..." (strtoul's ULONG_MAX, kept as an
 * unsigned) asked malloc for 32 GB. A plain malloc returns NULL there, and gsched loads
 * through its trial child anyway; ASan's allocator reports it as a crash of the run, and
 * a few thousand objects would pass libFuzzer's 2 GB malloc limit.
 */
static bool nbobjs_large(const char *tag, size_t len)
{
    for (size_t at = find(tag, 0, len, "nbobjs="); at < len;
         at = find(tag, at + 1, len, "nbobjs=")) {
        size_t i = at + 7, digits = 0;
        unsigned long value = 0;

        if (i < len && tag[i] == '"') /* single quotes made double by screened_out */
            i++;
        for (; i < len && tag[i] >= '0' && tag[i] <= '9'; i++, digits++)
            value = digits < 6 ? value * 10 + (unsigned long)(tag[i] - '0') : value;
        if (digits == 0 || digits > 5 || value > 4096)
            return true;
    }
    return false;
}

/* Whether the tag's type="..." is one hwloc reads as a NUMA node: its letters up to the
 * first other character (hwloc_type_sscanf reads no further: "NUM4" is a NUMA node) are a
 * prefix of "numanode" or "node", two letters at least, in any case. */
static bool numa_type(const char *tag, size_t len)
{
    static const char *const names[] = {"numanode", "node"};
    size_t at = find(tag, 0, len, " type=\""), n = 0;

    if (at == len)
        return false;
    at += 7;
    while (at + n < len && isalpha((unsigned char)tag[at + n]))
        n++;
    if (at + n == len || n < 2)
        return false;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (n <= strlen(names[i]) && strncasecmp(tag + at, names[i], n) == 0)
            return true;
    return false;
}

/* A NUMA node without a cpuset: hwloc_bitmap_isequal(NULL) in hwloc's XML import
 * (hwloc-crashes/numa-without-cpuset.xml, where type="NU" is read as NUMANode). */
static bool numa_without_cpuset(const char *tag, size_t len)
{
    return numa_type(tag, len) && !contains(tag, len, " cpuset=");
}

/* Whether a tag has a set attribute without its complete_ twin, or the twin alone, or a set
 * that is not a whole bitmap. */
static bool half_set(const char *tag, size_t len)
{
    return contains(tag, len, " cpuset=") != contains(tag, len, " complete_cpuset=") ||
           contains(tag, len, " nodeset=") != contains(tag, len, " complete_nodeset=") ||
           set_not_bitmap(tag, len);
}

/* Whether a <!DOCTYPE ...> declaration lacks a system id: hwloc 2.9.0's libxml2 plugin
 * compares the id with strcmp without looking for NULL. */
static bool doctype_without_system(const char *text, size_t len)
{
    size_t at = find(text, 0, len, "<!DOCTYPE");

    for (; at < len; at = find(text, at + 1, len, "<!DOCTYPE")) {
        const char *close = memchr(text + at, '>', len - at);
        size_t n = (close != NULL ? (size_t)(close - text) : len) - at;

        if (!contains(text + at, n, "SYSTEM") && !contains(text + at, n, "PUBLIC"))
            return true;
    }
    return false;
}

/* Whether some <object ...> tag, or the DOCTYPE, is one hwloc 2.9.0 crashes on (see the top),
 * or a tag that makes hwloc clear hundreds of megabytes (os_index_slow) or ask for
 * gigabytes (nbobjs_large). */
static bool screened_text(const char *text, size_t size)
{
    const char *end = text + size;

    if (doctype_without_system(text, size))
        return true;

    for (const char *p = text; p < end; p++) {
        const char *close = memchr(p, '>', (size_t)(end - p));
        size_t len = (close != NULL ? close : end) - p;

        if (*p == '<' && (half_set(p, len) || numa_without_cpuset(p, len) ||
                          os_index_slow(p, len) || nbobjs_large(p, len)))
            return true;
        if (*p == '<')
            p += len > 0 ? len - 1 : 0;
    }
    return false;
}

/*
 * The checks above look for ` name="` as hwloc writes attributes. XML also allows a tab,
 * a newline or a carriage return before the name and single quotes around the value, and
 * libxml2 reads those the same, so the checks run on a copy with them made spaces and
 * double quotes.
 */
static bool screened_out(const uint8_t *data, size_t size)
{
    char *text = malloc(size > 0 ? size : 1);
    bool skip;

    if (text == NULL)
        abort();
    for (size_t i = 0; i < size; i++) {
        char c = (char)data[i];

        text[i] = c == '\t' || c == '\n' || c == '\r' ? ' ' : c == '\'' ? '"' : c;
    }
    skip = screened_text(text, size);
    free(text);
    return skip;
}

/* What placement asks of a node's topology. */
static void ask(const struct gs_topo *topo)
{
    int ngpus = gs_topo_ngpus(topo), nnics = gs_topo_nnics(topo), os_index;

    for (int a = 0; a < ngpus; a++) {
        int nvlinks;

        for (int b = 0; b < ngpus; b++)
            (void)gs_topo_gpu_link(topo, a, b, &nvlinks);
        for (int n = 0; n < nnics; n++)
            (void)gs_topo_gpu_nic_link(topo, a, n);
        (void)gs_topo_gpu_nearest_nic(topo, a);
        if (gs_topo_gpu(topo, a) == NULL)
            abort();
    }
    for (int c = 0; c < gs_topo_ncores(topo); c++)
        if (gs_topo_core(topo, c) == NULL)
            abort();
    for (int i = 0; i < gs_topo_nnuma(topo); i++)
        (void)gs_topo_numa_memory_mib(topo, i, &os_index);
    (void)gs_topo_hostname(topo);
    (void)gs_topo_memory_mib(topo);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_topo_opts opts = {.xml_path = xml_path};
    struct gs_topo *topo = NULL;
    struct gs_error err;

    if (screened_out(data, size))
        return 0;
    if (write_xml(data, size) < 0)
        abort();
    if (gs_topo_load(&opts, &topo, &err) == 0)
        ask(topo);
    gs_topo_free(topo);
    return 0;
}
