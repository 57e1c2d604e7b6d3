#!/usr/bin/env bash
# nodes-topology.sh BIN_DIR SRC_DIR: `gsched nodes --topology` end to end. A real gschedd and
# two gsched-workerd on loopback in a temporary directory, one with the NVSwitch fixture and
# one with the PCIe-switch fixture: the matrix each worker registered comes back through the
# scheduler and prints as `nvidia-smi topo -m` would, in text and in --json. Polls with
# deadlines, never bare sleeps.
name="nodes-topology"
. "$(dirname "$0")/../daemons.sh" "$@"
node_up() { "$bin/gsched" nodes "$1" | grep -qE "^$1 +up "; }
# has TEXT REGEX: some line of TEXT matches the extended regular expression.
has() { grep -qE -- "$2" <<< "$1" || fail "no line matching '$2' in:"$'\n'"$1"; }

write_config
"$bin/gschedd" --config "$tmp/gsched.toml" 2>"$tmp/gschedd.log" &
pids+=("$!")
wait_for "gschedd to listen" test -S "$tmp/gschedd.sock"
for node in dgx-h100 pcie-8gpu; do
  "$bin/gsched-workerd" --scheduler 127.0.0.1:"$port" --auth-key "$tmp/gsched.key" --name "$node" \
    --topology "$src/tests/topologies/$node.xml" 2>"$tmp/$node.log" &
  pids+=("$!")
done
wait_for "dgx-h100 up" node_up dgx-h100
wait_for "pcie-8gpu up" node_up pcie-8gpu

out=$("$bin/gsched" nodes --topology dgx-h100) || fail "gsched nodes --topology failed"
has "$out" '^dgx-h100: up, 2 sockets, 112 cores, 8 GPUs, 4 NICs$'
has "$out" '^ +GPU0 +GPU1 .* GPU7 +NIC0 +NIC1 +NIC2 +NIC3 +CPU Affinity +NUMA Affinity +Nearest NIC$'
has "$out" '^GPU0 +X +NV18 +NV18 +NV18 +NV18 +NV18 +NV18 +NV18 +PIX +NODE +SYS +SYS +0-55 +0 +mlx5_0$'
has "$out" '^GPU7 +NV18( +NV18){6} +X +SYS +SYS +NODE +PIX +56-111 +1 +mlx5_3$'
has "$out" '^  NV# += '
has "$out" '^  NIC2: mlx5_2 \(ibp155s0, 0000:9b:00.0, NUMA 1\)$'

out=$("$bin/gsched" nodes --topology) || fail "gsched nodes --topology (all) failed"
has "$out" '^pcie-8gpu: up, 2 sockets, 64 cores, 8 GPUs, 2 NICs$'
has "$out" '^GPU0 +X +PIX +PXB +PXB +SYS +SYS +SYS +SYS +PHB +SYS +0-31 +0 +mlx5_0$'
has "$out" '^GPU6 +SYS +SYS +SYS +SYS +PXB +PXB +X +PIX +SYS +PHB +32-63 +1 +mlx5_1$'
[ "$(grep -c '^Legend:$' <<< "$out")" -eq 1 ] || fail "the legend is not printed once:"$'\n'"$out"

"$bin/gsched" nodes --topology --json > "$tmp/nodes.json" || fail "--topology --json failed"
python3 - "$tmp/nodes.json" <<'PY' || fail "JSON topology wrong: $(cat "$tmp/nodes.json")"
import json, sys
nodes = {n["name"]: n for n in json.load(open(sys.argv[1]))}
dgx = nodes["dgx-h100"]["topology"]
assert [g["links"][g["index"]] for g in dgx["gpus"]] == ["X"] * 8
assert all(c in ("X", "NV18") for g in dgx["gpus"] for c in g["links"])
assert dgx["gpus"][3]["nvlinks"][5] == 18
assert [g["nearest_nic"] for g in dgx["gpus"]] == [0, 0, 1, 1, 2, 2, 3, 3]
assert [n["ib_device"] for n in dgx["nics"]] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
pcie = nodes["pcie-8gpu"]["topology"]
assert pcie["gpus"][0]["links"] == ["X", "PIX", "PXB", "PXB", "SYS", "SYS", "SYS", "SYS"]
assert pcie["gpus"][4]["nic_links"] == ["SYS", "PHB"]
assert pcie["nics"][0]["gpu_links"] == ["PHB"] * 4 + ["SYS"] * 4
PY
"$bin/gsched" nodes --json | grep -q '"topology"' && fail "topology sent without --topology"

kill -TERM "${pids[@]}"
for p in "${pids[@]}"; do wait "$p" || fail "a daemon exited non-zero"; done
pids=()
# Under the sanitizer build the daemons report into their logs: those count too.
if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp"/*.log; then
  fail "sanitizer report in a daemon's log"
fi
echo "nodes-topology: ok"
