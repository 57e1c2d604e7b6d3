#!/usr/bin/env python3
"""Writes the hwloc 2 XML fixtures in this folder: fake nodes that tests (and
`gsched-workerd --topology FILE`) use on any machine.

    python3 gen_topologies.py [OUTDIR]

Each fixture is a Machine of packages (one NUMA node each), cores with two PUs
(Linux numbering: PU = thread * ncores + core), and a PCI tree per package laid
out the way hwloc shows real hardware: host bridges, PCIe root ports and
switches as PCI-PCI bridges (a switch is an upstream-port bridge with one
downstream-port bridge per link below it), and devices: NVIDIA GPUs with
CUDA/NVML OS devices, NICs with their network/OpenFabrics OS devices, NVSwitch
bridges, and on some a BMC VGA that must not be counted as a GPU.

Where a fixture has NVLink, it carries the "NVLinkBandwidth" distances matrix
that hwloc's NVML backend would write (values in MB/s, 25000 per NVLink 2-4
link, 1000000 on the diagonal): between the GPUs' NVML OS devices for direct
links, or in heterogeneous form (GPUs plus NVSwitch PCI devices, GPU to GPU
entries 0) behind NVSwitches, which gsched reads with hwloc's transitive
closure. The links each fixture models are in its function's comment.
"""
import os
import sys

NV_VENDOR = "10de"
H100_DEV = "2330"     # H100 SXM5 80GB
A6000_DEV = "2230"    # RTX A6000
L40S_DEV = "26b9"
NVLINK_MBPS = 25000   # one NVLink 2-4 link, one direction, as hwloc counts it
NVLINK_SELF = 1000000  # hwloc's diagonal value


class Writer:
    def __init__(self):
        self.lines = []
        self.gp = 0
        self.nvml_gp = {}      # GPU bus id -> gp_index of its NVML OS device
        self.nvswitch_gp = {}  # NVSwitch bus id -> gp_index of its PCI device

    def next_gp(self):
        self.gp += 1
        return self.gp

    def emit(self, depth, text):
        self.lines.append("  " * depth + text)


def bitmap(bits):
    """hwloc's bitmap string: 32-bit words, most significant first."""
    value = 0
    for b in bits:
        value |= 1 << b
    words = []
    while True:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
        if value == 0:
            break
    return ",".join("0x%08x" % w for w in reversed(words))


def sets(cpus, nodes):
    c, n = bitmap(cpus), bitmap(nodes)
    return ('cpuset="%s" complete_cpuset="%s" nodeset="%s" complete_nodeset="%s"'
            % (c, c, n, n))


class Node:
    """A fake node: sockets x cores x 2 threads, PCI trees per socket."""

    def __init__(self, name, sockets, cores_per_socket, mem_gib_per_socket):
        self.name = name
        self.sockets = sockets
        self.cores = cores_per_socket
        self.mem = mem_gib_per_socket << 30
        self.pci = {s: [] for s in range(sockets)}   # socket -> host bridges
        self.gpus = []                                # bus ids in PCI order
        self.nvlinks = {}       # (gpu index a, gpu index b) -> direct links, a < b
        self.nvswitches = []    # NVSwitch bus ids, when GPUs link through them
        self.switch_links = []  # links from every GPU to each NVSwitch, in that order

    def pus(self, socket):
        n = self.sockets * self.cores
        base = socket * self.cores
        return [t * n + base + c for t in (0, 1) for c in range(self.cores)]

    def all_pus(self):
        return [p for s in range(self.sockets) for p in self.pus(s)]


def gpu(bus, model, dev, mem_mib, uuid):
    return ("gpu", bus, model, dev, mem_mib, uuid)


def nic(bus, ifname, ibdev):
    return ("nic", bus, ifname, ibdev)


def nvswitch(bus):
    return ("nvswitch", bus)


def bmc_vga(bus):
    return ("vga", bus)


def write_pcidev(w, depth, dev):
    kind, bus = dev[0], dev[1]
    gp = w.next_gp()
    if kind == "gpu":
        _, _, model, devid, mem_mib, uuid = dev
        w.emit(depth, '<object type="PCIDev" gp_index="%d" pci_busid="%s" '
               'pci_type="0302 [%s:%s] [%s:16c1] a1" pci_link_speed="31.507692">'
               % (gp, bus, NV_VENDOR, devid, NV_VENDOR))
        w.emit(depth + 1, '<info name="PCIVendor" value="NVIDIA Corporation"/>')
        w.emit(depth + 1, '<info name="PCIDevice" value="%s"/>' % model)
        idx = dev_index(w, bus)
        w.emit(depth + 1, '<object type="OSDev" gp_index="%d" name="cuda%d" osdev_type="5">'
               % (w.next_gp(), idx))
        w.emit(depth + 2, '<info name="CoProcType" value="CUDA"/>')
        w.emit(depth + 2, '<info name="Backend" value="CUDA"/>')
        w.emit(depth + 2, '<info name="GPUVendor" value="NVIDIA Corporation"/>')
        w.emit(depth + 2, '<info name="GPUModel" value="%s"/>' % model)
        w.emit(depth + 2, '<info name="CUDAGlobalMemorySize" value="%d"/>' % (mem_mib * 1024))
        w.emit(depth + 1, '</object>')
        w.nvml_gp[bus] = w.next_gp()
        w.emit(depth + 1, '<object type="OSDev" gp_index="%d" name="nvml%d" osdev_type="1">'
               % (w.nvml_gp[bus], idx))
        w.emit(depth + 2, '<info name="Backend" value="NVML"/>')
        w.emit(depth + 2, '<info name="GPUVendor" value="NVIDIA Corporation"/>')
        w.emit(depth + 2, '<info name="GPUModel" value="%s"/>' % model)
        w.emit(depth + 2, '<info name="NVIDIAUUID" value="%s"/>' % uuid)
        w.emit(depth + 1, '</object>')
        w.emit(depth, '</object>')
    elif kind == "nic":
        _, _, ifname, ibdev = dev
        w.emit(depth, '<object type="PCIDev" gp_index="%d" pci_busid="%s" '
               'pci_type="0207 [15b3:101b] [15b3:0007] 00" pci_link_speed="31.507692">'
               % (gp, bus))
        w.emit(depth + 1, '<info name="PCIVendor" value="Mellanox Technologies"/>')
        w.emit(depth + 1, '<info name="PCIDevice" value="MT28908 Family [ConnectX-6]"/>')
        w.emit(depth + 1, '<object type="OSDev" gp_index="%d" name="%s" osdev_type="2"/>'
               % (w.next_gp(), ifname))
        w.emit(depth + 1, '<object type="OSDev" gp_index="%d" name="%s" osdev_type="3"/>'
               % (w.next_gp(), ibdev))
        w.emit(depth, '</object>')
    elif kind == "nvswitch":
        # subtype NVSwitch is what hwloc's NVML backend sets, and what its transitive
        # closure looks for.
        w.nvswitch_gp[bus] = gp
        w.emit(depth, '<object type="PCIDev" gp_index="%d" subtype="NVSwitch" pci_busid="%s" '
               'pci_type="0680 [%s:22a3] [%s:1796] a1" pci_link_speed="0.984615"/>'
               % (gp, bus, NV_VENDOR, NV_VENDOR))
    elif kind == "vga":
        w.emit(depth, '<object type="PCIDev" gp_index="%d" pci_busid="%s" '
               'pci_type="0300 [1a03:2000] [1a03:2000] 52" pci_link_speed="0.250000">'
               % (gp, bus))
        w.emit(depth + 1, '<info name="PCIVendor" value="ASPEED Technology, Inc."/>')
        w.emit(depth + 1, '<object type="OSDev" gp_index="%d" name="card0" osdev_type="1"/>'
               % w.next_gp())
        w.emit(depth, '</object>')


def dev_index(w, bus):
    return w.gpu_order.index(bus)


def bus_number(bus):
    return int(bus.split(":")[1], 16)


def bridge(busid, children, pci_type="0604 [1000:c030] [1000:a064] b0"):
    """A PCI-PCI bridge at busid; the default pci_type is a PCIe switch port."""
    return ("bridge", busid, children, pci_type)


def root_port(busid, child):
    return bridge(busid, [child], "0604 [8086:352a] [8086:0000] 04")


def switch(busid, children):
    """A PCIe switch: the upstream port at busid, one downstream port per child, on the
    upstream port's secondary bus (busid's bus + 1)."""
    bus = bus_number(busid) + 1
    return bridge(busid, [bridge("0000:%02x:%02x.0" % (bus, j), [c])
                          for j, c in enumerate(children)])


def is_bridge(item):
    return item[0] == "bridge"


def buses_below(item):
    """Bus numbers of item and everything under it (a bridge's range spans them)."""
    buses = [bus_number(item[1])]
    if is_bridge(item):
        for c in item[2]:
            buses += buses_below(c)
    return buses


def bus_range(items):
    buses = [b for it in items for b in buses_below(it)]
    return "0000:[%02x-%02x]" % (min(buses), max(buses))


def write_item(w, depth, level, item):
    if not is_bridge(item):
        write_pcidev(w, depth, item)
        return
    _, busid, children, pci_type = item
    w.emit(depth, '<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="%d" '
           'bridge_pci="%s" pci_busid="%s" pci_type="%s" pci_link_speed="31.507692">'
           % (w.next_gp(), level, bus_range(children), busid, pci_type))
    for c in children:
        write_item(w, depth + 1, level + 1, c)
    w.emit(depth, '</object>')


def write_hostbridge(w, depth, hb):
    """hb = [bridge or device ...]: what sits on one host bridge's root bus."""
    w.emit(depth, '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" '
           'bridge_pci="%s">' % (w.next_gp(), bus_range(hb)))
    for item in hb:
        write_item(w, depth + 1, 1, item)
    w.emit(depth, '</object>')


def values_xml(w, depth, values):
    """hwloc's layout: 10 values per element, each followed by a space; length counts
    the characters."""
    for i in range(0, len(values), 10):
        text = "".join("%s " % v for v in values[i:i + 10])
        w.emit(depth, '<u64values length="%d">%s</u64values>' % (len(text), text))


def indexes_xml(w, depth, indexes):
    for i in range(0, len(indexes), 10):
        text = "".join("%s " % v for v in indexes[i:i + 10])
        w.emit(depth, '<indexes length="%d">%s</indexes>' % (len(text), text))


def write_nvlink(w, node):
    """The NVLinkBandwidth matrix: homogeneous (GPU OS devices only) for direct links,
    heterogeneous (GPUs, then NVSwitch PCI devices) when GPUs link through NVSwitches."""
    gpus = [w.nvml_gp[b] for b in w.gpu_order]
    n = len(gpus) + len(node.nvswitches)
    bw = [[NVLINK_SELF if i == j else 0 for j in range(n)] for i in range(n)]
    for (a, b), links in node.nvlinks.items():
        bw[a][b] = bw[b][a] = links * NVLINK_MBPS
    for k, links in enumerate(node.switch_links):
        for g in range(len(gpus)):
            bw[g][len(gpus) + k] = bw[len(gpus) + k][g] = links * NVLINK_MBPS
    flat = [v for row in bw for v in row]
    if node.nvswitches:
        w.emit(1, '<distances2hetero nbobjs="%d" kind="25" name="NVLinkBandwidth">' % n)
        indexes_xml(w, 2, ["OSDev:%d" % g for g in gpus] +
                    ["PCIDev:%d" % w.nvswitch_gp[b] for b in node.nvswitches])
        values_xml(w, 2, flat)
        w.emit(1, '</distances2hetero>')
    else:
        # kind 9: HWLOC_DISTANCES_KIND_FROM_OS | HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH
        w.emit(1, '<distances2 type="OSDev" nbobjs="%d" kind="9" name="NVLinkBandwidth" '
               'indexing="gp">' % n)
        indexes_xml(w, 2, gpus)
        values_xml(w, 2, flat)
        w.emit(1, '</distances2>')


def write_node(node):
    w = Writer()
    w.gpu_order = sorted(node.gpus)
    pus_all = node.all_pus()
    nodes_all = list(range(node.sockets))
    w.emit(0, '<?xml version="1.0" encoding="UTF-8"?>')
    w.emit(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    w.emit(0, '<topology version="2.0">')
    c = bitmap(pus_all)
    n = bitmap(nodes_all)
    w.emit(1, '<object type="Machine" os_index="0" %s allowed_cpuset="%s" allowed_nodeset="%s" '
           'gp_index="%d">' % (sets(pus_all, nodes_all), c, n, w.next_gp()))
    w.emit(2, '<info name="Backend" value="Linux"/>')
    w.emit(2, '<info name="OSName" value="Linux"/>')
    w.emit(2, '<info name="HostName" value="%s"/>' % node.name)
    w.emit(2, '<info name="Architecture" value="x86_64"/>')
    for s in range(node.sockets):
        write_package(w, node, s)
    w.emit(1, '</object>')
    if node.nvlinks or node.nvswitches:
        write_nvlink(w, node)
    w.emit(0, '</topology>')
    return "\n".join(w.lines) + "\n"


def write_package(w, node, s):
    pus = node.pus(s)
    w.emit(2, '<object type="Package" os_index="%d" %s gp_index="%d">'
           % (s, sets(pus, [s]), w.next_gp()))
    w.emit(3, '<info name="CPUVendor" value="GenuineIntel"/>')
    w.emit(3, '<info name="CPUModel" value="Intel(R) Xeon(R) Platinum 8480+"/>')
    w.emit(3, '<object type="NUMANode" os_index="%d" %s gp_index="%d" local_memory="%d"/>'
           % (s, sets(pus, [s]), w.next_gp(), node.mem))
    ncores = node.sockets * node.cores
    for c in range(node.cores):
        core = s * node.cores + c
        cpus = [core, core + ncores]
        w.emit(3, '<object type="Core" os_index="%d" %s gp_index="%d">'
               % (core, sets(cpus, [s]), w.next_gp()))
        for p in cpus:
            w.emit(4, '<object type="PU" os_index="%d" %s gp_index="%d"/>'
                   % (p, sets([p], [s]), w.next_gp()))
        w.emit(3, '</object>')
    for hb in node.pci[s]:
        write_hostbridge(w, 3, hb)
    w.emit(2, '</object>')


def uuid(n):
    return "GPU-6e0b7d1c-%04x-4a3b-9c2d-%012x" % (n, 0x5eed0000 + n)


def dgx_h100():
    """8x H100 SXM, 2 sockets. Each host bridge has a root port to a PCIe switch with 2 GPUs
    and a NIC (GPU pairs 0-1, 2-3, ... PIX; GPU to the NIC of its switch PIX). Every GPU
    has 18 NVLinks to the 4 NVSwitches (5, 4, 4, 5), so every GPU pair is NV18."""
    node = Node("dgx-h100", 2, 56, 1024)
    g = 0
    for s in range(2):
        for k in range(2):
            base = 0x18 + 0x40 * (2 * s + k)
            devs = []
            for j in range(2):
                bus = "0000:%02x:00.0" % (base + 1 + j)
                devs.append(gpu(bus, "NVIDIA H100 80GB HBM3", H100_DEV, 81559, uuid(g)))
                node.gpus.append(bus)
                g += 1
            devs.append(nic("0000:%02x:00.0" % (base + 3), "ibp%ds0" % (base + 3),
                            "mlx5_%d" % (2 * s + k)))
            sw = switch("0000:%02x:00.0" % (base - 1), devs)
            node.pci[s].append([root_port("0000:%02x:01.0" % (base - 2), sw)])
    node.pci[0].append([bmc_vga("0000:03:00.0")])
    node.nvswitches = ["0000:%02x:00.0" % b for b in (0xe4, 0xe5, 0xe6, 0xe7)]
    node.switch_links = [5, 4, 4, 5]
    node.pci[1].append([nvswitch(b) for b in node.nvswitches])
    return node


def pcie_8gpu():
    """8x L40S, no NVLink, 2 sockets. Per socket one host bridge: a root port to a top PCIe
    switch with two leaf switches of 2 GPUs each (0-1 PIX, 0-2 PXB), and a root port to
    the socket's NIC (GPU to its socket's NIC PHB). Across sockets SYS."""
    node = Node("pcie-8gpu", 2, 32, 512)
    g = 0
    for s in range(2):
        off = 0x80 * s
        leaves = []
        for k in range(2):
            base = 0x20 + 0x40 * k + off
            devs = []
            for j in range(2):
                bus = "0000:%02x:00.0" % (base + 1 + j)
                devs.append(gpu(bus, "NVIDIA L40S", L40S_DEV, 46068, uuid(0x100 + g)))
                node.gpus.append(bus)
                g += 1
            leaves.append(switch("0000:%02x:00.0" % (base - 1), devs))
        root = 0x0f + off
        nic_dev = nic("0000:%02x:00.0" % (0x10 + off), "ens%df0" % s, "mlx5_%d" % s)
        node.pci[s].append([root_port("0000:%02x:01.0" % root, nic_dev),
                            root_port("0000:%02x:02.0" % root,
                                      switch("0000:%02x:00.0" % (0x1d + off), leaves))])
    return node


def ws_4gpu():
    """Workstation: 1 socket, 4x RTX A6000, each on a root port of its own host bridge
    (every pair NODE over PCIe), NVLink bridges of 4 links on pairs 0-1 and 2-3 (NV4)."""
    node = Node("ws-4gpu", 1, 16, 256)
    for j, b in enumerate((0x17, 0x31, 0x65, 0xb1)):
        bus = "0000:%02x:00.0" % b
        dev = gpu(bus, "NVIDIA RTX A6000", A6000_DEV, 48676, uuid(0x200 + j))
        node.pci[0].append([root_port("0000:%02x:01.0" % (b - 1), dev)])
        node.gpus.append(bus)
    node.pci[0].append([bmc_vga("0000:03:00.0")])
    node.nvlinks = {(0, 1): 4, (2, 3): 4}
    return node


def cpu_only():
    """CPU-only node: 2 sockets, one NIC, a BMC VGA (which is not a GPU)."""
    node = Node("cpu-only", 2, 8, 64)
    node.pci[0] = [[root_port("0000:40:01.0", nic("0000:41:00.0", "ens1f0", "mlx5_0"))],
                   [bmc_vga("0000:03:00.0")]]
    return node


FIXTURES = {"dgx-h100.xml": dgx_h100, "pcie-8gpu.xml": pcie_8gpu, "ws-4gpu.xml": ws_4gpu,
            "cpu-only.xml": cpu_only}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, make in FIXTURES.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(write_node(make()))


if __name__ == "__main__":
    main()
