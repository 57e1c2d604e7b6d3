#!/bin/bash
# profile.sh BIN MODE: gsched-train's Chrome/Perfetto trace (--profile.steps) end to end, on
# shards of the licence texts:
#   - one rank, 6 steps of 2 micro-steps with --profile.steps=2: trace.json is JSON in the
#     Trace Event Format with the rank and lanes named, spans for exactly steps 2 and 3 (the
#     default start: two warm-up steps), a data wait, forward and backward per micro-step
#     inside their step, each pass's parts (embedding, every block, head) in order inside
#     it, clip and optimizer per step, the eval and checkpoint after step 2 and the
#     checkpoint writer thread's write of it on its own lane (its data, fsync and rename
#     inside it), the loader thread's batch fills on its lane and eval's loader's too,
#     eval's forward passes with their parts, nothing dropped, and one line naming the file;
#   - profile.start and profile.path choose the steps and the file; a bad value is refused
#     with its place;
#   - with MODE mpi, 2 ranks: trace.json (pid 0) and trace-rank1.json (pid 1), each with
#     every gradient bucket's all-reduce on the comm lane of both steps, each the end of a
#     flow arrow from where the compute lane handed the bucket over, the loss's all-reduce
#     there too, and on at least one step an all-reduce that starts while backward is still
#     running (the overlap).
set -u
name=trainer_profile
mode=${2:-local}
. "$(dirname "$0")/lib.sh"
trn_test_start "$1"
build_shards "$tmp/data"
cat > "$tmp/tiny.toml" << EOF2
threads = 1
[model]
layers = 2
heads = 2
channels = 32
context = 32
[data]
dir = "$tmp/data"
[batch]
global_tokens = 256
micro = 4
[optim]
lr = 3e-3
warmup_steps = 2
steps = 6
[eval]
every = 3
batches = 2
[checkpoint]
every = 3
EOF2

# check TRACE RANK STEPS MICRO [BUCKETS]: the trace's structure (see the header); with
# BUCKETS, the all-reduces and their overlap with backward.
check() {
  "$py" - "$@" << 'PY'
import json, sys
path, rank, steps, micro = sys.argv[1], int(sys.argv[2]), eval(sys.argv[3]), int(sys.argv[4])
buckets = int(sys.argv[5]) if len(sys.argv) > 5 else 0
doc = json.load(open(path))
ev = doc["traceEvents"]
meta = {(e["name"], e.get("tid")): e["args"] for e in ev if e["ph"] == "M"}
spans = [e for e in ev if e["ph"] == "X"]
def need(cond, what):
    if not cond:
        sys.exit("%s: %s" % (path, what))
need(doc["displayTimeUnit"] == "ms", "displayTimeUnit")
need(meta[("process_name", 0)]["name"] == "rank %d" % rank, "process name")
lanes = {t: meta[("thread_name", t)]["name"] for t in range(6)}
need(lanes == {0: "compute", 1: "comm", 2: "data", 3: "checkpoint", 4: "loader",
               5: "checkpoint writer"}, "lanes %s" % lanes)
# The loader's reader thread filled batches ahead during the window, on its own lane. That
# one did is certain, not luck, when the window has a batch k the reader could start only
# once the window was open: it waits for batch k - prefetch (>= 0) to be let go, when the
# consumer asks for batch k - prefetch + 1, which must be in the window. Each run below
# sets prefetch so (a: batches 4-7, prefetch 4; b: 0-1, 1; the ranks: 2-3, 2).
fills = [e for e in spans if e["name"] == "fill batch"]
need(fills and all(e["tid"] == 4 and e["args"]["samples"] > 0 for e in fills),
     "loader fills %s" % fills[:3])
need(all(e["pid"] == rank for e in ev if "pid" in e), "pid is not the rank")
other = doc["otherData"]
flows = [e for e in ev if e["ph"] in ("s", "f")]
need(other["rank"] == rank and other["events"] == len(spans) + len(flows) and
     other["dropped"] == 0, "otherData %s" % other)
need([e["ts"] for e in spans] == sorted(e["ts"] for e in spans), "not in start order")
def named(n, step=None):
    return [e for e in spans if e["name"] == n and (step is None or e["args"].get("step") == step)]
for n in ("step", "forward", "backward", "optimizer", "clip", "loss", "data wait"):
    got = sorted({e["args"].get("step") for e in named(n)})
    need(got == steps, "%s for steps %s, want %s" % (n, got, steps))
for s in steps:
    step = named("step", s)
    need(len(step) == 1, "%d step spans for step %d" % (len(step), s))
    lo, hi = step[0]["ts"], step[0]["ts"] + step[0]["dur"]
    for n in ("forward", "backward", "data wait"):
        got = sorted(e["args"]["micro"] for e in named(n, s))
        need(got == list(range(micro)), "step %d: %s micro-steps %s" % (s, n, got))
    for e in named("forward", s) + named("backward", s) + named("optimizer", s):
        need(lo <= e["ts"] and e["ts"] + e["dur"] <= hi + 0.001, "%s outside its step" % e)
        need(e["tid"] == 0, "%s not on the compute lane" % e)
    need(all(e["tid"] == 2 for e in named("data wait", s)), "data waits not on the data lane")
    # Inside each pass its parts, in order: forward embedding, blocks 0..L-1, head; backward
    # head, blocks L-1..0, embedding (tiny.toml's 2 layers).
    for pas, order in (("forward", ["embedding", 0, 1, "head"]),
                       ("backward", ["head", 1, 0, "embedding"])):
        for outer in named(pas, s):
            a, b = outer["ts"], outer["ts"] + outer["dur"] + 0.001
            parts = [e for e in spans if e.get("cat") == pas and a <= e["ts"] and
                     e["ts"] + e["dur"] <= b and e["name"] in ("embedding", "block", "head")]
            got = [e["args"]["layer"] if e["name"] == "block" else e["name"] for e in parts]
            need(got == order, "step %d: %s parts %s, want %s" % (s, pas, got, order))
            need(all(e["tid"] == 0 and e["args"]["step"] == s for e in parts),
                 "step %d: %s parts off the compute lane or step" % (s, pas))
if buckets:
    overlapped = 0
    for s in steps:
        step = named("step", s)[0]
        lo, hi = step["ts"], step["ts"] + step["dur"]
        ar = [e for e in named("all-reduce") if e["tid"] == 1 and lo <= e["ts"] <= hi]
        need(sorted(e["args"]["bucket"] for e in ar) == list(range(buckets)),
             "step %d: all-reduces %s" % (s, [e["args"] for e in ar]))
        need(all(e["args"]["bytes"] > 0 for e in ar), "bucket bytes")
        wait = [e for e in named("comm wait") if lo <= e["ts"] <= hi and e["tid"] == 0]
        need(len(wait) == 1, "step %d: %d comm waits" % (s, len(wait)))
        bwd = [e for e in named("backward", s) if e["args"]["micro"] == micro - 1][0]
        end = bwd["ts"] + bwd["dur"]
        overlapped += any(bwd["ts"] < e["ts"] < end for e in ar)
        loss = [e for e in named("all-reduce loss", s) if e["tid"] == 1]
        need(len(loss) == 1, "step %d: %d loss all-reduces on the comm lane" % (s, len(loss)))
        # Each all-reduce is the end of an arrow from the compute lane, where backward (or
        # the comm wait, for a bucket it never handed over) let the bucket go.
        hosts = [e for e in named("backward", s) + named("comm wait") if e["tid"] == 0]
        for a in ar:
            f = [e for e in flows if e["ph"] == "f" and e["tid"] == 1 and abs(e["ts"] - a["ts"]) < 0.002]
            need(len(f) == 1, "step %d: bucket %d has %d flow ends" % (s, a["args"]["bucket"], len(f)))
            st = [e for e in flows if e["ph"] == "s" and e["id"] == f[0]["id"]]
            need(len(st) == 1 and st[0]["tid"] == 0 and st[0]["ts"] <= a["ts"] + 0.002 and
                 any(h["ts"] <= st[0]["ts"] <= h["ts"] + h["dur"] + 0.002 for h in hosts),
                 "step %d: bucket %d's flow start %s" % (s, a["args"]["bucket"], st))
    need(overlapped > 0, "no all-reduce started during backward")
print("%s: %d spans, steps %s%s" % (path, len(spans), steps,
                                    ", overlap on %d" % overlapped if buckets else ""))
PY
}

# --- one rank: the default start, the default file -----------------------------------------
"$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/a" --profile.steps=2 \
  > "$tmp/a.log" 2>&1 || fail "the profiled run failed: $(cat "$tmp/a.log")"
grep -q "^profile: rank 0 wrote [0-9]* events (0 dropped) of steps 2-3 to $tmp/a/trace.json\$" \
  "$tmp/a.log" || fail "no profile line: $(cat "$tmp/a.log")"
check "$tmp/a/trace.json" 0 "[2, 3]" 2 || fail "the one-rank trace"
"$py" - "$tmp/a/trace.json" << 'PY' || fail "eval and checkpoint"
import json, sys
spans = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
got = sorted((e["name"], e["tid"], e["args"]["step"]) for e in spans
             if e["name"] in ("eval", "checkpoint", "checkpoint stall", "write"))
# The writer thread's durable write of that checkpoint (of 3 steps done), on its own lane,
# after the training thread handed it over.
want = [("checkpoint", 3, 2), ("checkpoint stall", 3, 2), ("eval", 0, 2), ("write", 5, 3)]
if got != want:
    sys.exit("eval/checkpoint spans %s, want %s" % (got, want))
# Eval's forward passes, broken into their parts as training's are.
ev_span = [e for e in spans if e["name"] == "eval"][0]
lo, hi = ev_span["ts"], ev_span["ts"] + ev_span["dur"] + 0.002
fwds = [e for e in spans if e["name"] == "eval forward" and lo <= e["ts"] <= hi]
if len(fwds) < 2: # eval.batches 2 of 8 sequences, in micro-batches of 4
    sys.exit("%d eval forwards inside eval" % len(fwds))
for f in fwds:
    a, b = f["ts"], f["ts"] + f["dur"] + 0.001
    parts = [e["args"].get("layer", e["name"]) for e in spans if e.get("cat") == "forward" and
             a <= e["ts"] and e["ts"] + e["dur"] <= b and e["name"] in ("embedding", "block", "head")]
    if parts != ["embedding", 0, 1, "head"]:
        sys.exit("eval forward parts %s" % parts)
# Eval's own loader filled its batches on the loader lane, inside the eval.
efills = [e for e in spans if e["name"] == "fill eval batch"]
if len(efills) < 2 or not all(e["tid"] == 4 and lo <= e["ts"] <= hi for e in efills):
    sys.exit("eval fills %s" % efills)
ck = [e for e in spans if e["name"] == "checkpoint"][0]
wr = [e for e in spans if e["name"] == "write"][0]
if not (wr["ts"] >= ck["ts"] and wr["args"]["bytes"] > 0):
    sys.exit("write %s" % wr)
# Inside the write, its parts in order: the data, fsync, rename.
a, b = wr["ts"], wr["ts"] + wr["dur"] + 0.002
parts = [e["name"] for e in spans if e["tid"] == 5 and e is not wr and a <= e["ts"] and
         e["ts"] + e["dur"] <= b]
sys.exit(None if parts == ["write data", "fsync", "rename"] else "write parts %s" % parts)
PY
[ ! -e "$tmp/a/trace.json.tmp" ] || fail "a temporary file stayed"

# --- profile.start and profile.path; a bad value -------------------------------------------
"$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/b" --profile.steps=1 \
  --profile.start=0 --profile.path=prof.json --data.prefetch=1 > "$tmp/b.log" 2>&1 || fail "$(cat "$tmp/b.log")"
check "$tmp/b/prof.json" 0 "[0]" 2 || fail "profile.start = 0"
[ ! -e "$tmp/b/trace.json" ] || fail "trace.json written beside profile.path"
"$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/c" --profile.steps=lots \
  > "$tmp/c.log" 2>&1
status=$?
[ $status = 2 ] || fail "a bad profile.steps: exit $status, want 2"
grep -q "^option --profile.steps:1:[0-9]*: profile.steps must be an integer" "$tmp/c.log" ||
  fail "the refusal: $(cat "$tmp/c.log")"

if [ "$mode" != mpi ]; then
  echo "$name: one-rank checks passed (built without MPI: no 2-rank run)"
  exit 0
fi

# --- two ranks: a file per rank, buckets on the comm lane, overlap with backward -------------
# 1.7M parameters in 1 MiB buckets: 7 buckets, the first ready early in backward.
cat > "$tmp/ddp.toml" << EOF2
threads = 1
[model]
layers = 2
heads = 2
channels = 256
context = 64
[data]
dir = "$tmp/data"
prefetch = 2
[batch]
global_tokens = 256
micro = 2
[optim]
warmup_steps = 2
steps = 5
[eval]
every = 0
[ddp]
bucket_mib = 1
first_bucket_mib = 1
EOF2
mpi 2 "$bin/gsched-train" train "$tmp/ddp.toml" --out_dir="$tmp/d" --profile.steps=2 \
  > "$tmp/d.log" 2>&1 || fail "2 ranks: $(cat "$tmp/d.log")"
buckets=$(sed -n 's/^data parallel: 2 ranks (mpi), \([0-9]*\) gradient buckets.*/\1/p' "$tmp/d.log")
[ "${buckets:-0}" -gt 1 ] || fail "want several buckets: $(cat "$tmp/d.log")"
for r in 0 1; do
  grep -q "^profile: rank $r wrote [0-9]* events (0 dropped) of steps 2-3 to " "$tmp/d.log" ||
    fail "no profile line for rank $r: $(cat "$tmp/d.log")"
done
check "$tmp/d/trace.json" 0 "[2, 3]" 1 "$buckets" || fail "rank 0's trace"
check "$tmp/d/trace-rank1.json" 1 "[2, 3]" 1 "$buckets" || fail "rank 1's trace"
echo "$name: all checks passed"
