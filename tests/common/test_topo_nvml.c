/*
 * test_topo_nvml.c: NVLink counts from NVML when hwloc has no NVLinkBandwidth matrix. The
 * "machine" is a fixture with its matrix cut out, loaded as this system (hwloc's
 * HWLOC_XMLFILE and HWLOC_THISSYSTEM), and libnvidia-ml.so.1 is fake_nvml.c, which ctest
 * puts on LD_LIBRARY_PATH. Without that library (test_topo) the same loads find no NVLink
 * and fail nothing.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/topo.h"

/* Copies fixture NAME to a temporary file without its <distances2...> element. */
static void write_without_matrix(const char *name, char *path)
{
    char src[512], *text, *start, *end;
    FILE *in, *out;
    long len;
    int fd;

    snprintf(src, sizeof(src), "%s/%s", GSCHED_TOPOLOGIES, name);
    in = fopen(src, "r");
    cr_assert_not_null(in, "%s", src);
    fseek(in, 0, SEEK_END);
    len = ftell(in);
    rewind(in);
    text = calloc((size_t)len + 1, 1);
    cr_assert_eq(fread(text, 1, (size_t)len, in), (size_t)len);
    fclose(in);
    start = strstr(text, "  <distances2");
    end = strstr(text, "</topology>");
    cr_assert(start != NULL && end != NULL && start < end, "%s has no NVLink matrix", name);
    fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    out = fdopen(fd, "w");
    fwrite(text, 1, (size_t)(start - text), out);
    fputs(end, out);
    fclose(out);
    free(text);
}

static struct gs_topo *load_as_this_system(const char *name, char *path)
{
    struct gs_topo_opts opts = {0};
    struct gs_topo *topo = NULL;
    struct gs_error err;

    write_without_matrix(name, path);
    setenv("HWLOC_XMLFILE", path, 1);
    setenv("HWLOC_THISSYSTEM", "1", 1);
    cr_assert_eq(gs_topo_load(&opts, &topo, &err), 0, "%s", err.msg);
    cr_assert(gs_topo_is_this_system(topo));
    unlink(path);
    return topo;
}

Test(topo_nvml, counts_links_through_nvswitches)
{
    char path[] = "/tmp/gsched-nvml-XXXXXX";
    struct gs_topo *topo = load_as_this_system("dgx-h100.xml", path);

    cr_assert_eq(gs_topo_ngpus(topo), 8);
    for (int a = 0; a < 8; a++) {
        for (int b = a + 1; b < 8; b++) {
            int nvlinks = 0;

            cr_assert_eq(gs_topo_gpu_link(topo, a, b, &nvlinks), GS_TOPO_LINK_NVLINK);
            cr_assert_eq(nvlinks, 18, "gpu %d-%d has %d", a, b, nvlinks);
        }
    }
    gs_topo_free(topo);
}

Test(topo_nvml, counts_direct_links_and_ignores_peers_that_are_no_nvswitch)
{
    char path[] = "/tmp/gsched-nvml-XXXXXX";
    struct gs_topo *topo = load_as_this_system("ws-4gpu.xml", path);
    int nvlinks = -1;

    cr_assert_eq(gs_topo_gpu_link(topo, 0, 1, &nvlinks), GS_TOPO_LINK_NVLINK);
    cr_assert_eq(nvlinks, 4, "the link to the VGA does not count");
    cr_assert_eq(gs_topo_gpu_link(topo, 3, 2, &nvlinks), GS_TOPO_LINK_NVLINK);
    cr_assert_eq(nvlinks, 4);
    cr_assert_eq(gs_topo_gpu_link(topo, 0, 2, &nvlinks), GS_TOPO_LINK_NODE);
    cr_assert_eq(nvlinks, 0);
    gs_topo_free(topo);
}

Test(topo_nvml, asks_nvml_only_about_this_machine)
{
    char path[] = "/tmp/gsched-nvml-XXXXXX";
    struct gs_topo_opts opts = {.xml_path = path};
    struct gs_topo *topo = NULL;
    int nvlinks = -1;

    write_without_matrix("ws-4gpu.xml", path);
    cr_assert_eq(gs_topo_load(&opts, &topo, NULL), 0);
    unlink(path);
    cr_assert_eq(gs_topo_gpu_link(topo, 0, 1, &nvlinks), GS_TOPO_LINK_NODE,
                 "an XML file is another machine: its GPUs are not NVML's");
    cr_assert_eq(nvlinks, 0);
    gs_topo_free(topo);
}
