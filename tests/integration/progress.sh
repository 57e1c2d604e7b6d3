#!/usr/bin/env bash
# progress.sh BIN_DIR SRC_DIR TESTS_DIR: live training progress in `gsched show` (issue 7).
# On a `gsched up` cluster of one worker, a job runs gsched-train on a tiny model; its rank 0
# reports through the worker's socket (GSCHED_SOCKET, relayed to gschedd), and once the job
# has ended `gsched show --json` still has the last report: step == steps, the last eval
# loss, and the text view a "Progress:" line. Then reports a trainer never sends, through
# progress_send (tests/integration/progress_send.c): for a job that has ended, for no job,
# from root for a running job (taken, its free text cleaned of control characters and cut),
# and, as root with setpriv, from another uid for root's job (refused: by gschedd for the
# job's owner, and by the relay, since that uid has no job on the node). gschedd must run on.
name="progress"
. "$(dirname "$0")/lib.sh"
tests=$(cd "$3" && pwd) || exit 1
send=$tests/progress_send
[ -x "$send" ] || fail "no $send (build the progress_send target)"

start_cluster --workers 1 --gpus-per-node 0 --heartbeat 1s --kill-grace 1s

"$bin/gsched" shard build --out "$tmp/data" --val-fraction 0.05 /usr/share/common-licenses/* \
  > "$tmp/build.log" 2>&1 || fail "shard build: $(cat "$tmp/build.log")"

# 12 steps, a report every 5 (steps 1, 6, 11), after each eval (6, 12) and at the end.
cat > "$work/tiny.toml" << EOF
threads = 1
out_dir = "$work/run"
[model]
layers = 1
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
steps = 12
[eval]
every = 6
batches = 1
[checkpoint]
every = 0
[metrics]
log_every = 5
EOF
job_file train.toml "name = \"train\"
[resources]
nodes = 1
[run]
command = [\"$bin/gsched-train\", \"train\", \"$work/tiny.toml\"]
stdout = \"train.out\""

j=$(submit train.toml)
wait_end "$j" 120 || fail "training job failed: $(jq "$j" 'j'); its output: $(cat "$work/train.out" 2>&1)"
[ "$(job_state "$j")" = COMPLETED ] || fail "training job: $(jq "$j" 'j')"
grep -q "warning: progress report" "$work/train.out" &&
  fail "the trainer could not report: $(cat "$work/train.out")"
expect "$j" 'd["progress"] is not None' "a progress report"
expect "$j" 'd["progress"]["job_id"] == int(j["job_id"]) and d["progress"]["step"] == 12 and d["progress"]["steps"] == 12' \
  "the last report at step 12 of 12"
expect "$j" 'd["progress"]["eval_loss"] > 0 and d["progress"]["eval_step"] == 12' "the last eval's loss"
expect "$j" '0 < d["progress"]["loss"] < 100 and d["progress"]["tokens_per_s"] > 0 and d["progress"]["ranks"] == 1' \
  "loss, tokens/s and ranks"
expect "$j" 'd["progress"]["received_ms"] >= j["start_time_ms"] and d["progress"]["received_ms"] <= j["end_time_ms"]' \
  "a report received while the job ran"
"$bin/gsched" show "$j" > "$tmp/show.txt" 2>&1 || fail "show $j: $(cat "$tmp/show.txt")"
grep -Eq '^Progress: step 12/12 \(100%\) loss [0-9.]+ eval [0-9.]+ tokens/s [0-9]+( data-wait [0-9.]+ ms)? ranks 1 \([0-9]+ s ago\)$' \
  "$tmp/show.txt" || fail "no Progress line in: $(cat "$tmp/show.txt")"

# --- refused: a job that is not running, a job that does not exist ---------------------------
sock=$state/node1.sock # as a task would: through the worker
out=$("$send" "$GSCHED_SOCKET" "$j" 13 12 2>&1)
[ $? = 1 ] && [[ $out == *"is COMPLETED: progress is taken from running jobs only"* ]] ||
  fail "a report for an ended job: $out"
# Through the worker, once root has no job left on node1, node1 no longer speaks for root.
out=$("$send" "$sock" "$j" 13 12 2>&1)
[ $? = 1 ] && [[ $out == *"uid 0 has no running job on node1"* ]] ||
  fail "a report through node1 with no job there: $out"
out=$("$send" "$GSCHED_SOCKET" 999999 1 2 2>&1)
[ $? = 1 ] && [[ $out == *"job 999999: no such job"* ]] || fail "a report for no job: $out"
expect "$j" 'd["progress"]["step"] == 12' "the ended job's report unchanged"

# --- a running job: root's report is taken, its text cleaned -------------------------------
job_file gated.toml "name = \"gated\"
[resources]
nodes = 1
[run]
script = \"\"\"
$(gate_wait gated)
\"\"\""
g=$(submit gated.toml)
wait_start "$g"
expect "$g" 'd["progress"] is None' "no progress before any report"
long=$(printf 'line one\nline\ttwo %0300d' 0)
out=$("$send" "$sock" "$g" 3 10 "$long" 2>&1) || fail "root's report for a running job: $out"
expect "$g" 'd["progress"]["step"] == 3 and d["progress"]["steps"] == 10' "root's report"
expect "$g" 'd["progress"]["text"].startswith("line one line two 000") and len(d["progress"]["text"]) == 200' \
  "the text on one line, 200 bytes"
"$bin/gsched" show "$g" > "$tmp/show-g.txt" 2>&1 || fail "show $g: $(cat "$tmp/show-g.txt")"
grep -Eq '^Progress: step 3/10 \(30%\) loss 2.500 tokens/s 1000 ranks 1 \([0-9]+ s ago\)$' "$tmp/show-g.txt" ||
  fail "no Progress line in: $(cat "$tmp/show-g.txt")"

# --- another uid may not report for root's job ------------------------------------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
  setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  cp "$send" "$tmp/progress_send" || fail "cannot copy $send"
  chmod o+x "$tmp" "$state" # the sockets and the helper, reachable by that user
  for s in "$sock" "$GSCHED_SOCKET"; do
    out=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/progress_send" "$s" "$g" 9 10 2>&1)
    rc=$?
    want="only its owner or root may report its progress"
    [ "$s" = "$sock" ] && want="uid 65534 has no running job on node1" # node1 speaks for root only
    [ $rc = 1 ] && [[ $out == *"$want"* ]] || fail "uid 65534's report for root's job through $s: $out"
  done
  expect "$g" 'd["progress"]["step"] == 3' "root's job's report unchanged"
else
  echo "$name: not root (or no setpriv): the other-uid refusal is not checked"
fi

gate gated
wait_end "$g" || fail "gated job: $(jq "$g" 'j')"
"$bin/gsched" nodes > /dev/null 2>&1 || fail "gschedd no longer answers"
check_logs
stop_cluster
echo "$name: ok"
