#!/usr/bin/env python3
"""Writes the hwloc 2 XML fixtures in this folder: fake nodes that tests (and
`gsched-workerd --topology FILE`) use on any machine.

    python3 gen_topologies.py [OUTDIR]

Each fixture is a Machine of packages (one NUMA node each), cores with two PUs
(Linux numbering: PU = thread * ncores + core), and a PCI tree per package:
host bridges, PCIe switches (PCI-PCI bridges) and devices: NVIDIA GPUs with
CUDA/NVML OS devices, NICs with their network/OpenFabrics OS devices, NVSwitch
bridges, and on some a BMC VGA that must not be counted as a GPU. Where the
fixture models NVLink, the pairs are listed in its comment (the distance
matrix arrives with topology-aware placement).
"""
import os
import sys

NV_VENDOR = "10de"
H100_DEV = "2330"     # H100 SXM5 80GB
A6000_DEV = "2230"    # RTX A6000
L40S_DEV = "26b9"


class Writer:
    def __init__(self):
        self.lines = []
        self.gp = 0

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
        w.emit(depth + 1, '<object type="OSDev" gp_index="%d" name="nvml%d" osdev_type="1">'
               % (w.next_gp(), idx))
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
        w.emit(depth, '<object type="PCIDev" gp_index="%d" pci_busid="%s" '
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


def write_switch(w, depth, sw):
    """sw = (bridge_busid, [devices]); a PCIe switch as one PCI-PCI bridge."""
    busid, devs = sw
    lo = min(bus_number(d[1]) for d in devs)
    hi = max(bus_number(d[1]) for d in devs)
    w.emit(depth, '<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="1" '
           'bridge_pci="0000:[%02x-%02x]" pci_busid="%s" '
           'pci_type="0604 [1000:c030] [1000:a064] b0" pci_link_speed="31.507692">'
           % (w.next_gp(), lo, hi, busid))
    for d in devs:
        write_pcidev(w, depth + 1, d)
    w.emit(depth, '</object>')


def write_hostbridge(w, depth, hb):
    """hb = [switch or device ...]; one host bridge per list."""
    buses = []
    for item in hb:
        if isinstance(item[1], list):
            buses += [bus_number(d[1]) for d in item[1]] + [bus_number(item[0])]
        else:
            buses.append(bus_number(item[1]))
    w.emit(depth, '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" '
           'bridge_pci="0000:[%02x-%02x]">' % (w.next_gp(), min(buses), max(buses)))
    for item in hb:
        if isinstance(item[1], list):
            write_switch(w, depth + 1, item)
        else:
            write_pcidev(w, depth + 1, item)
    w.emit(depth, '</object>')


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
    """8x H100 SXM on NVSwitch, 2 sockets; each PCIe switch holds 2 GPUs and a NIC."""
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
            node.pci[s].append([("0000:%02x:00.0" % base, devs)])
    node.pci[0].append([bmc_vga("0000:03:00.0")])
    node.pci[1].append([nvswitch("0000:%02x:00.0" % b) for b in (0xe4, 0xe5, 0xe6, 0xe7)])
    return node


def pcie_8gpu():
    """8x L40S over 4 PCIe switches (2 GPUs each), 2 per socket; one NIC per socket."""
    node = Node("pcie-8gpu", 2, 32, 512)
    g = 0
    for s in range(2):
        for k in range(2):
            base = 0x20 + 0x40 * (2 * s + k)
            devs = []
            for j in range(2):
                bus = "0000:%02x:00.0" % (base + 1 + j)
                devs.append(gpu(bus, "NVIDIA L40S", L40S_DEV, 46068, uuid(0x100 + g)))
                node.gpus.append(bus)
                g += 1
            node.pci[s].append([("0000:%02x:00.0" % base, devs)])
        node.pci[s].append([nic("0000:%02x:00.0" % (0x10 + 0x80 * s), "ens%df0" % s,
                                "mlx5_%d" % s)])
    return node


def ws_4gpu():
    """Workstation: 1 socket, 4x RTX A6000, NVLink bridges on pairs (0,1) and (2,3)."""
    node = Node("ws-4gpu", 1, 16, 256)
    hb = []
    for j, b in enumerate((0x17, 0x31, 0x65, 0xb1)):
        bus = "0000:%02x:00.0" % b
        hb.append(gpu(bus, "NVIDIA RTX A6000", A6000_DEV, 48676, uuid(0x200 + j)))
        node.gpus.append(bus)
    node.pci[0] = [[d] for d in hb]
    node.pci[0].append([bmc_vga("0000:03:00.0")])
    return node


def cpu_only():
    """CPU-only node: 2 sockets, one NIC, a BMC VGA (which is not a GPU)."""
    node = Node("cpu-only", 2, 8, 64)
    node.pci[0] = [[nic("0000:41:00.0", "ens1f0", "mlx5_0")], [bmc_vga("0000:03:00.0")]]
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
