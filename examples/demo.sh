#!/usr/bin/env bash
# demo.sh BUILD_DIR: the main job of `make demo`. Starts a local cluster in a temporary
# directory (gschedd and two gsched-workerd with synthetic GPUs), shows its nodes, checks
# the example job file the way `gsched submit` will, shows a rejected one, and stops the
# cluster. (Submitting and running jobs arrive with the scheduler's job path.)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/bin"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-demo.XXXXXX")
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
export GSCHED_SOCKET="$tmp/gschedd.sock"

wait_for() {
  local deadline=$((SECONDS + 15))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "demo: cluster did not come up" >&2; exit 1; }
    sleep 0.05
  done
}
both_up() {
  "$bin/gsched" nodes --json | python3 -c '
import json, sys
nodes = json.load(sys.stdin)
sys.exit(0 if len([n for n in nodes if n["state"] == "up"]) == 2 else 1)'
}

"$bin/gsched" --version
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf '[scheduler]\nhost = "127.0.0.1"\nport = %s\nsocket = "%s"\n' "$port" "$GSCHED_SOCKET" \
  > "$tmp/gsched.toml"
echo "--- starting gschedd and two workers (node1: 2 GPUs, node2: 4 GPUs) in $tmp"
"$bin/gschedd" --config "$tmp/gsched.toml" 2>"$tmp/gschedd.log" & pids+=($!)
wait_for test -S "$GSCHED_SOCKET"
"$bin/gsched-workerd" --scheduler "127.0.0.1:$port" --name node1 --gpus 2 --features demo \
  2>"$tmp/node1.log" & pids+=($!)
"$bin/gsched-workerd" --scheduler "127.0.0.1:$port" --name node2 --gpus 4 \
  2>"$tmp/node2.log" & pids+=($!)
wait_for both_up
echo "--- gsched nodes"
"$bin/gsched" nodes
echo "--- gsched check examples/hello.toml"
"$bin/gsched" check "$here/hello.toml"
echo "--- a job file with a mistake is refused, the problem at its place:"
printf 'name = "typo"\n[resources]\ngpu_per_node = 4\n[run]\ncommand = ["true"]\n' \
  > "$tmp/typo.toml"
"$bin/gsched" check "$tmp/typo.toml" || true
echo "--- stopping the cluster"
kill -TERM "${pids[@]}"
wait "${pids[@]}"
pids=()
echo "demo: done"
