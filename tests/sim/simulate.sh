#!/usr/bin/env bash
# simulate.sh BIN TRACES_DIR PYTHON: gsched-simulate on the Tiresias 60-job fixture.
#   - on 4 nodes (16 GPUs, saturated): the JSON has every policy, fifo-firstfit first, with
#     every figure; every job finishes under every policy; easy's average JCT is at most
#     fifo-firstfit's; allocation and utilisation are within 0..1; Jain's index in (0, 1]
#   - the -preempt policies preempt (count and GPU-hours lost), the others never; urgent
#     jobs wait less under easy-preempt than under easy; the same run twice prints the same
#   - the text table has a row per policy; --svg writes an SVG
#   - with --datasets, on 8 nodes: the -data policies too, every job reading one of the
#     datasets; easy-data-wait and easy-data-ski copy less than easy, which knows nothing of
#     the caches; the data line names the model; a -data policy without --datasets, or a
#     bad size, is a usage error (exit 2)
#   - a bad trace line is named FILE:LINE (exit 1); a bad option is a usage error (exit 2)
set -euo pipefail
bin=$1 traces=$2 python=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-sim.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
args=(--trace "tiresias:$traces/60_job.csv" --cluster "$traces/n32g4.csv" --nodes 4)

"$bin" "${args[@]}" --json --svg "$tmp/out.svg" >"$tmp/out.json"
"$python" - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pol = d["policies"]
names = [p["policy"] for p in pol]
assert names == ["fifo-firstfit", "easy", "conservative", "multifactor", "fifo-topo", "easy-topo",
                 "multifactor-topo", "easy-preempt", "multifactor-preempt", "easy-topo-preempt",
                 "multifactor-topo-preempt"], names
assert d["urgent_share"] == 0.1 and d["checkpoint_interval_s"] == 1800, d
assert d["kill_grace_s"] == 30, d
assert d["nodes"] == 4 and d["gpus"] == 16 and d["trace_jobs"] == 60, d
keys = ["jobs", "finished", "impossible", "timeouts", "passes", "avg_jct_s", "p99_jct_s",
        "avg_wait_s", "p99_wait_s", "makespan_s", "alloc_while_queued", "util",
        "stranded_gpus", "queued_share", "jain", "avg_stretch", "jct_vs_fifo", "preemptions",
        "preempted_jobs", "gpu_hours_lost", "preemption", "urgent_jobs", "urgent_avg_wait_s",
        "urgent_avg_jct_s"]
by = {}
for p in pol:
    for k in keys:
        assert k in p, (p["policy"], k)
    assert p["jobs"] == 60 and p["finished"] == 60 and p["impossible"] == 0, p
    assert p["timeouts"] == 0, p
    assert 0 <= p["alloc_while_queued"] <= 1 and 0 <= p["util"] <= 1, p
    assert 0 < p["jain"] <= 1, p
    assert 0 <= p["stranded_gpus"] <= 16, p
    assert p["p99_jct_s"] >= p["avg_jct_s"] > 0 and p["avg_wait_s"] >= 0, p
    assert 1 <= p["avg_stretch"] <= 1.4, p
    if p["policy"].endswith("-preempt"):
        assert p["preemption"] == "on" and p["preemptions"] > 0, p
        assert p["gpu_hours_lost"] > 0 and p["preempted_jobs"] <= p["preemptions"], p
    else:
        assert p["preemption"] == "off" and p["preemptions"] == 0, p
        assert p["gpu_hours_lost"] == 0, p
    assert p["urgent_jobs"] > 0, p
    by[p["policy"]] = p
assert by["fifo-firstfit"]["jct_vs_fifo"] == 1, by["fifo-firstfit"]
assert by["easy"]["avg_jct_s"] <= by["fifo-firstfit"]["avg_jct_s"], (by["easy"], by["fifo-firstfit"])
assert by["conservative"]["avg_jct_s"] <= by["fifo-firstfit"]["avg_jct_s"], by["conservative"]
assert by["fifo-firstfit"]["alloc_while_queued"] > 0, "saturated: jobs wait"
assert by["easy-preempt"]["urgent_avg_wait_s"] < by["easy"]["urgent_avg_wait_s"], by
print("sim_tiresias: json ok; easy/fifo avg JCT = %.3f; easy-preempt: %d preemptions"
      % (by["easy"]["jct_vs_fifo"], by["easy-preempt"]["preemptions"]))
PY
head -c 5 "$tmp/out.svg" | grep -q '^<svg' && tail -n 1 "$tmp/out.svg" | grep -q '^</svg>$'
"$bin" "${args[@]}" --json >"$tmp/again.json"
cmp -s "$tmp/out.json" "$tmp/again.json"

"$bin" "${args[@]}" --policy easy,easy-topo >"$tmp/out.txt"
grep -q '^policy ' "$tmp/out.txt"
test "$(grep -cE '^(fifo-firstfit|easy|easy-topo) ' "$tmp/out.txt")" = 3
grep -q ' preempt gpuh_lost$' "$tmp/out.txt"
grep -q '^urgent jobs (10.0% marked' "$tmp/out.txt"
test "$(grep -c '^preemption:' "$tmp/out.txt")" = 0
"$bin" "${args[@]}" --policy easy-preempt --urgent-share 0 >"$tmp/none.txt"
grep -qE '^easy-preempt +60 +60 .* 0 +0\.00$' "$tmp/none.txt"
"$bin" "${args[@]}" --policy easy-preempt --checkpoint-interval 5m --kill-grace 0 \
  >"$tmp/pre.txt"
grep -q '^preemption: checkpoints every 300s of a run .* kill grace 0s' "$tmp/pre.txt"

data=(--trace "tiresias:$traces/60_job.csv" --cluster "$traces/n32g4.csv" --nodes 8
  --datasets 10 --cache 1T)
"$bin" "${data[@]}" --json --policy easy,easy-data,easy-data-wait,easy-data-ski >"$tmp/data.json"
"$python" - "$tmp/data.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["datasets"] == 10 and d["dataset_bytes"] == 500 << 30, d
assert d["cache_bytes"] == 1 << 40 and d["copy_rate"] == 1 << 30 and d["data_wait_s"] == 600, d
by = {p["policy"]: p for p in d["policies"]}
assert list(by) == ["fifo-firstfit", "easy", "easy-data", "easy-data-wait", "easy-data-ski"], by
for p in by.values():
    assert p["finished"] == 60 and p["timeouts"] == 0, p
    assert p["copies"] > 0 and p["copied_bytes"] > 0 and p["avg_copy_s"] > 0, p
for k in ("easy-data-wait", "easy-data-ski"):
    assert by[k]["copied_bytes"] < by["easy"]["copied_bytes"], (k, by[k], by["easy"])
print("sim_tiresias: data: copied easy %d GiB, wait %d, ski %d" %
      tuple(by[k]["copied_bytes"] >> 30 for k in ("easy", "easy-data-wait", "easy-data-ski")))
PY
"$bin" "${data[@]}" --policy easy-data-ski >"$tmp/data.txt"
grep -q '^data: 10 datasets of 500G (by account), caches of 1T per node, copies at 1G/s' \
  "$tmp/data.txt"
rc=0; "$bin" "${args[@]}" --policy easy-data 2>"$tmp/err" || rc=$?
test "$rc" = 2 && grep -q "easy-data needs --datasets" "$tmp/err"
rc=0; "$bin" "${args[@]}" --datasets 2 --cache lots 2>/dev/null || rc=$?
test "$rc" = 2

printf 'job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,x,1,m,5,1\n' \
  >"$tmp/bad.csv"
rc=0; "$bin" --trace "tiresias:$tmp/bad.csv" --cluster "$traces/n32g4.csv" 2>"$tmp/err" || rc=$?
test "$rc" = 1 && grep -q "bad.csv:2: submit_time: 'x' is not a whole number" "$tmp/err"
rc=0; "$bin" --trace "nope:$tmp/bad.csv" --cluster x 2>/dev/null || rc=$?
test "$rc" = 2
rc=0; "$bin" "${args[@]}" --policy sjf 2>/dev/null || rc=$?
test "$rc" = 2
rc=0; "$bin" "${args[@]}" --urgent-share 101 2>/dev/null || rc=$?
test "$rc" = 2
rc=0; "$bin" "${args[@]}" --kill-grace forever 2>/dev/null || rc=$?
test "$rc" = 2
echo "sim_tiresias: ok"
