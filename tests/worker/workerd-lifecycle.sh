#!/usr/bin/env bash
# workerd-lifecycle.sh WORKERD SRC_DIR: gsched-workerd started with no scheduler listening
# keeps running and retrying, and SIGTERM stops it cleanly (exit 0) within a few seconds;
# bad options are refused with status 2 and a message, and a cluster key that is missing or
# open to others with status 1 and a message naming it.
set -u
workerd=$1
src=$2
tmp=$(mktemp -d)
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "workerd-lifecycle: $*" >&2; cat "$tmp/log" >&2 2>/dev/null; exit 1; }

"$workerd" --gpus 9999 2>"$tmp/err"; [ $? -eq 2 ] || fail "--gpus 9999 not refused"
grep -q "gpus wants" "$tmp/err" || fail "no message for --gpus 9999"

# A port nobody listens on: bind one, then close it.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$workerd" --scheduler 127.0.0.1:"$port" --auth-key "$tmp/none.key" 2>"$tmp/err"
[ $? -eq 1 ] || fail "a missing key did not stop it"
grep -q "scheduler.auth_key: $tmp/none.key: No such file" "$tmp/err" || fail "$(cat "$tmp/err")"
head -c 32 /dev/urandom > "$tmp/gsched.key"
chmod 0644 "$tmp/gsched.key"
"$workerd" --scheduler 127.0.0.1:"$port" --auth-key "$tmp/gsched.key" 2>"$tmp/err"
[ $? -eq 1 ] || fail "a key others can read did not stop it"
grep -q "open to others (mode 644)" "$tmp/err" || fail "$(cat "$tmp/err")"
chmod 0600 "$tmp/gsched.key"

"$workerd" --scheduler 127.0.0.1:"$port" --auth-key "$tmp/gsched.key" --name nodeX --topology "$src/tests/topologies/ws-4gpu.xml" \
  --log-level debug 2>"$tmp/log" &
pid=$!
deadline=$((SECONDS + 10))
until grep -q "node=nodeX gpus=4 cores=16" "$tmp/log"; do
  [ $SECONDS -lt $deadline ] || fail "never started"
  kill -0 $pid 2>/dev/null || fail "exited early"
  sleep 0.05
done
until grep -q "cannot reach the scheduler" "$tmp/log"; do
  [ $SECONDS -lt $deadline ] || fail "never tried to connect"
  sleep 0.05
done
kill -TERM $pid
deadline=$((SECONDS + 10))
while kill -0 $pid 2>/dev/null; do
  [ $SECONDS -lt $deadline ] || fail "did not stop on SIGTERM"
  sleep 0.05
done
wait $pid
rc=$?
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp/log"; then
  fail "sanitizer report in the worker's log"
fi
echo "workerd-lifecycle: ok"
