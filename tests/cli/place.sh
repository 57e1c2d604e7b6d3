#!/usr/bin/env bash
# place.sh BIN_DIR SRC_DIR: `gsched place` on every topology fixture. These pin the GPU sets
# gschedd's placement (common/gpuset.h) picks on real node shapes, read from the hwloc XML as
# a worker reads it: NVLink pairs before PCIe, one switch before several, one socket before
# two, partly used groups before whole free ones; and how the command fails when no set can
# be given. Facts are read from --json with python3, so the text layout may change freely.
set -u
gsched=$1/gsched
topo=$2/tests/topologies
failures=0

fail() {
  echo "place: $*" >&2
  failures=$((failures + 1))
}

# expect FIXTURE 'PYTHON CONDITION ON j' ARGS...: gsched place succeeds on the fixture and
# the condition holds for its JSON output, j.
expect() {
  local fixture=$1 cond=$2 out
  shift 2
  if ! out=$("$gsched" place --topology "$topo/$fixture.xml" --json "$@" 2>&1); then
    fail "$fixture $*: failed: $out"
    return
  fi
  python3 -c '
import json, sys
j = json.loads(sys.argv[2])
sys.exit(0 if eval(sys.argv[1]) else 1)' "$cond" "$out" ||
    fail "$fixture $*: expected $cond, got $out"
}

# refuse STATUS FIXTURE REGEX ARGS...: gsched place exits with STATUS and its error output
# matches the extended regular expression.
refuse() {
  local status=$1 fixture=$2 regex=$3 out rc
  shift 3
  out=$("$gsched" place --topology "$topo/$fixture.xml" "$@" 2>&1)
  rc=$?
  [ "$rc" -eq "$status" ] || fail "$fixture $*: exit $rc, expected $status: $out"
  grep -qE -- "$regex" <<< "$out" || fail "$fixture $*: no '$regex' in: $out"
}

# ws-4gpu: NVLink bridges 0-1 and 2-3 (NV4), NODE otherwise.
expect ws-4gpu 'j["gpus"] in ([0, 1], [2, 3]) and j["worst"] == "NV4"' --gpus 2
expect ws-4gpu 'j["gpus"] == [2, 3] and j["worst"] == "NV4"' --gpus 2 --busy 0
# One GPU goes where it breaks no free pair: 1, whose partner is busy, not 2.
expect ws-4gpu 'j["gpus"] == [1] and j["worst"] is None' --gpus 1 --busy 0
expect ws-4gpu 'j["gpus"] == [0, 1, 2, 3] and j["worst"] == "NODE" and j["nvlinks"] == 8' \
  --gpus 4
expect ws-4gpu 'j["gpus"] == [0, 2] and j["worst"] == "NODE"' --gpus 2 --busy 1,3
expect ws-4gpu 'j["devices"][0]["pci_bus_id"] == "0000:17:00.0"' --gpus 1

# pcie-8gpu: per socket a top switch over two leaf switches of two GPUs each.
expect pcie-8gpu 'j["gpus"] == [0, 1] and j["worst"] == "PIX" and j["best_possible"] == "PIX"' \
  --gpus 2
expect pcie-8gpu 'j["gpus"] == [0, 1, 2, 3] and j["worst"] == "PXB"' --gpus 4
expect pcie-8gpu 'set(d["numa_node"] for d in j["devices"]) == {0}' --gpus 4
# With 0,1 busy, 2-3 stay whole for the next pair: the job takes the other socket.
expect pcie-8gpu 'j["gpus"] == [4, 5, 6, 7] and j["worst"] == "PXB"' --gpus 4 --busy 0,1
expect pcie-8gpu 'j["gpus"] == [2, 3] and j["worst"] == "PIX"' --gpus 2 --busy 0,1
expect pcie-8gpu 'j["gpus"] == [1, 3] and j["worst"] == "PXB" and j["best_possible"] == "PIX"' \
  --gpus 2 --busy 0,2,4,6
expect pcie-8gpu 'j["worst"] == "SYS" and j["best_possible"] == "SYS"' --gpus 8
# any: the lowest free indices, links ignored (and a 4-GPU job split across sockets).
expect pcie-8gpu 'j["gpus"] == [2, 3, 4, 5] and j["worst"] == "SYS"' --gpus 4 --busy 0,1 \
  --affinity any
expect pcie-8gpu 'j["gpus"] == [2, 3, 4, 5, 6, 7]' --gpus 6 --busy 0-1

# dgx-h100: NVSwitch, every pair NV18.
expect dgx-h100 'j["gpus"] == list(range(8)) and j["worst"] == "NV18" and j["nvlinks"] == 504' \
  --gpus 8
expect dgx-h100 'j["worst"] == "NV18" and j["score"] == j["best_score"]' --gpus 3 --busy 1,4 \
  --affinity strict

# No set to give: exit 1 with the reason.
refuse 1 pcie-8gpu 'no 2-GPU set as good as PIX is free; the best now is PXB' \
  --gpus 2 --busy 0,2,4,6 --affinity strict
refuse 1 pcie-8gpu 'has 2 free of 8' --gpus 3 --busy 0-5
refuse 1 ws-4gpu 'has 4$' --gpus 5
refuse 1 cpu-only 'cpu-only.xml has no GPUs' --gpus 1
refuse 1 ws-4gpu 'GPU 9, but .*ws-4gpu.xml has GPUs 0-3' --gpus 1 --busy 9
refuse 1 no-such-node 'no-such-node.xml: No such file' --gpus 1

# Bad usage: exit 2.
refuse 2 ws-4gpu "--busy wants GPU indices" --gpus 1 --busy 1-x
refuse 2 ws-4gpu "--busy wants GPU indices" --gpus 1 --busy 3-1
refuse 2 ws-4gpu "--busy ends with a comma" --gpus 1 --busy 0,
refuse 2 ws-4gpu "--gpus wants 1 to 64" --gpus 0
refuse 2 ws-4gpu "how many GPUs" --busy 0
refuse 2 ws-4gpu "--affinity is prefer, strict or any" --gpus 1 --affinity best
out=$("$gsched" place --gpus 1 2>&1)
[ $? -eq 2 ] && grep -q 'which node' <<< "$out" || fail "no --topology: $out"

# The text form names the set, its worst link and the GPUs' bus ids.
out=$("$gsched" place --topology "$topo/ws-4gpu.xml" --gpus 2 --busy 0 2>&1) ||
  fail "text output failed: $out"
grep -qE '^2 GPUs, affinity prefer: GPUs 2,3$' <<< "$out" || fail "no set line in: $out"
grep -qE '^worst link NV4 ' <<< "$out" || fail "no worst link in: $out"
grep -qE '^3 +0000:b1:00\.0 +0 ' <<< "$out" || fail "no GPU 3 row in: $out"

[ "$failures" -eq 0 ] || exit 1
echo "place: all passed"
