#!/bin/bash
# train.sh BIN SRC: gsched-train end to end on shards built from the licence texts under
# /usr/share/common-licenses: a run trains and writes metrics.jsonl, loss.svg and a
# checkpoint; a run stopped by SIGUSR1 (raised at an exact step through
# GSCHED_TRAIN_SIGNAL_AT, so that the comparison is deterministic) exits 75 after a checkpoint
# and, started again, resumes and produces bitwise the same losses as the run that was never
# stopped; a SIGTERM from outside stops a long run the same way; sample
# generates text from the checkpoint; bad settings are refused with their place.
set -u
bin=$(cd "$1" && pwd) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
name=trainer_train
py=$(python3 -c 'import sys; print(sys.executable)') || exit 1

fail() {
  echo "$name: $*" >&2
  exit 1
}

# wait_for WHAT SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@"; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $what"
    sleep 0.1
  done
}

"$bin/gsched" shard build --out "$tmp/data" --val-fraction 0.05 /usr/share/common-licenses/* \
  > "$tmp/build.log" 2>&1 || fail "shard build: $(cat "$tmp/build.log")"

cat > "$tmp/tiny.toml" << EOF2
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
steps = 20
[eval]
every = 10
batches = 2
[checkpoint]
every = 5
keep = 2
EOF2

# losses FILE: "step loss" per train record, the loss as the exact decimal it was written.
losses() {
  "$py" -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line, parse_float=str)
    if r["kind"] == "train":
        print(r["step"], r["loss"])' "$1"
}

# --- a straight run --------------------------------------------------------------------------
"$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/a" > "$tmp/a.log" 2>&1 ||
  fail "the straight run failed: $(cat "$tmp/a.log")"
grep -q '^done: 20 steps' "$tmp/a.log" || fail "no done line: $(cat "$tmp/a.log")"
[ "$(losses "$tmp/a/metrics.jsonl" | wc -l)" = 20 ] || fail "not 20 train records"
grep -q '"kind":"eval","step":9,' "$tmp/a/metrics.jsonl" || fail "no eval after step 10"
head -c 5 "$tmp/a/loss.svg" | grep -q '<svg' || fail "loss.svg is not an SVG"
[ "$(ls "$tmp/a/checkpoints" | grep -c '^ckpt-.*\.gstf$')" = 2 ] || fail "keep = 2: $(ls "$tmp/a/checkpoints")"
[ -f "$tmp/a/checkpoints/ckpt-00000020.gstf" ] || fail "no final checkpoint"

# --- stopped by SIGUSR1 after step 10 (as the batch system's --signal would), then resumed -------
GSCHED_TRAIN_SIGNAL_AT=10 "$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/b" > "$tmp/b1.log" 2>&1
status=$?
[ $status = 75 ] || fail "stopped run: exit $status, want 75: $(cat "$tmp/b1.log")"
grep -q 'asks to be requeued' "$tmp/b1.log" || fail "no requeue line: $(cat "$tmp/b1.log")"
[ "$(losses "$tmp/b/metrics.jsonl" | wc -l)" = 10 ] || fail "the run did not stop after step 10"
[ -f "$tmp/b/checkpoints/ckpt-00000010.gstf" ] || fail "no checkpoint at the stop: $(ls "$tmp/b/checkpoints")"
"$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/b" > "$tmp/b2.log" 2>&1 ||
  fail "the resumed run failed: $(cat "$tmp/b2.log")"
grep -q "^resuming from .*ckpt-00000010.gstf at step 10" "$tmp/b2.log" ||
  fail "did not resume at step 10: $(cat "$tmp/b2.log")"
losses "$tmp/a/metrics.jsonl" > "$tmp/a.losses"
losses "$tmp/b/metrics.jsonl" > "$tmp/b.losses"
cmp -s "$tmp/a.losses" "$tmp/b.losses" ||
  fail "resumed losses differ from the straight run's: $(diff "$tmp/a.losses" "$tmp/b.losses")"

# --- a real SIGTERM from outside, mid-run, on a run that would take long -----------------------
"$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/d" --optim.steps=1000000 > "$tmp/d.log" 2>&1 &
pid=$!
wait_for "a few steps" 60 grep -q '"step":3,' "$tmp/d/metrics.jsonl"
kill -TERM $pid
wait $pid
status=$?
[ $status = 75 ] || fail "SIGTERM: exit $status, want 75: $(tail -3 "$tmp/d.log")"
ls "$tmp/d/checkpoints"/ckpt-*.gstf > /dev/null 2>&1 || fail "SIGTERM: no checkpoint written"

# --- sampling -----------------------------------------------------------------------------------
"$bin/gsched-train" sample "$tmp/a/checkpoints/ckpt-00000020.gstf" --prompt "The " --tokens 50 \
  --seed 3 > "$tmp/s1.txt" 2>&1 || fail "sample: $(cat "$tmp/s1.txt")"
[ "$(head -c 4 "$tmp/s1.txt")" = "The " ] || fail "the sample does not start with its prompt"
[ "$(wc -c < "$tmp/s1.txt")" -ge 54 ] || fail "short sample: $(cat "$tmp/s1.txt")"
"$bin/gsched-train" sample "$tmp/a/checkpoints/ckpt-00000020.gstf" --prompt "The " --tokens 50 \
  --seed 3 > "$tmp/s2.txt" 2>&1
cmp -s "$tmp/s1.txt" "$tmp/s2.txt" || fail "the same seed gave another sample"

# --- refused settings change nothing ------------------------------------------------------------
if "$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/c" --model.layrs=3 > "$tmp/c.log" 2>&1; then
  fail "a misspelt key was accepted"
fi
grep -q "option --model.layrs:1:7: unknown key 'layrs' in model (did you mean 'model.layers'?)" "$tmp/c.log" ||
  fail "bad key message: $(cat "$tmp/c.log")"
[ ! -e "$tmp/c" ] || fail "a refused run created its output directory"
printf '[model]\nheads = 5\n[data]\ndir = "%s"\n' "$tmp/data" > "$tmp/bad.toml"
if "$bin/gsched-train" train "$tmp/bad.toml" --out_dir="$tmp/c" > "$tmp/c.log" 2>&1; then
  fail "heads not dividing channels was accepted"
fi
grep -q 'model.channels (384) must be a multiple of model.heads (5)' "$tmp/c.log" ||
  fail "cross-key message: $(cat "$tmp/c.log")"
# --- devices ----------------------------------------------------------------------------------
# Asking for a GPU where there is none (or a build without CUDA) is a clear error; a GPU-only
# setting on the CPU is a note, not an error. (On a GPU machine bench/gpu_check.sh trains.)
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  if "$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/g" --device=cuda > "$tmp/g.log" 2>&1; then
    fail "device = cuda trained without a GPU"
  fi
  grep -qE 'device = "cuda": (no CUDA device is visible|this gsched-train was built without CUDA)' \
    "$tmp/g.log" || fail "no device message: $(cat "$tmp/g.log")"
fi
"$bin/gsched-train" train "$tmp/tiny.toml" --out_dir="$tmp/h" --device=cpu --cuda_graph=true \
  --attention=cudnn --optim.steps=2 > "$tmp/h.log" 2>&1 || fail "cuda_graph on the CPU: $(cat "$tmp/h.log")"
grep -q '^device: cpu' "$tmp/h.log" || fail "no device line: $(cat "$tmp/h.log")"
grep -q 'cuda_graph: only on a GPU; training without graphs' "$tmp/h.log" ||
  fail "no cuda_graph note: $(cat "$tmp/h.log")"
grep -q 'attention: cudnn only on a GPU; using the CPU kernels' "$tmp/h.log" ||
  fail "no attention note: $(cat "$tmp/h.log")"
echo "$name: all checks passed"
