#!/usr/bin/env bash
# fence.sh BIN_DIR SRC_DIR: with scheduler.fence_timeout, a job never runs twice at once when
# the link between a worker and gschedd is cut. The worker reaches gschedd through a TCP
# relay in this script that can stop passing bytes (a cut link, both ways). With the link
# cut, the worker hears no heartbeat acknowledgements and kills its task once fence_timeout
# has passed (fenced); gschedd declares the node down after its missed heartbeats and
# requeues the job only once fence_timeout and a heartbeat more have passed since it last
# heard it. When the link is back, the job's second attempt runs, and the first attempt's
# task was dead before the requeue.
name="fence"
. "$(dirname "$0")/../daemons.sh" "$@"

write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 2' 'kill_grace = "1s"' \
  'fence_timeout = "3s"' '[worker]' "log_dir = \"$tmp\""
"$bin/gschedd" --config "$tmp/gsched.toml" 2>>"$tmp/gschedd.log" &
pids+=("$!")
wait_for "gschedd to listen" test -S "$tmp/gschedd.sock"

# The link: 127.0.0.1:$relay_port -> gschedd; `touch $tmp/cut` stops it passing bytes.
relay_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 - "$relay_port" "$port" "$tmp/cut" <<'PY' 2>"$tmp/relay.log" &
import os, selectors, socket, sys
lport, dport, cut = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", lport)); ls.listen(8)
sel = selectors.DefaultSelector(); sel.register(ls, selectors.EVENT_READ)
peer = {}
while True:
    for key, _ in sel.select(timeout=0.05):
        s = key.fileobj
        if s is ls:
            a, _ = ls.accept(); b = socket.create_connection(("127.0.0.1", dport))
            peer[a], peer[b] = b, a
            sel.register(a, selectors.EVENT_READ); sel.register(b, selectors.EVENT_READ)
            continue
        if os.path.exists(cut):
            continue  # a cut link: bytes wait in the kernel, nothing passes
        data = s.recv(65536) if s in peer else b""
        if not data:
            o = peer.pop(s, None)
            for x in (s, o):
                if x is not None:
                    peer.pop(x, None)
                    try: sel.unregister(x)
                    except Exception: pass
                    x.close()
            continue
        peer[s].sendall(data)
PY
pids+=("$!")
"$bin/gsched-workerd" --config "$tmp/gsched.toml" --scheduler 127.0.0.1:"$relay_port" --name node1 \
  --gpus 0 2>"$tmp/node1.log" &
pids+=("$!")
node_up() { "$bin/gsched" nodes --json node1 | grep -q '"state": *"up"'; }
wait_for "node1 up" node_up

# A job that may restart once; each attempt notes its pid, the second whether the first's
# process is still alive.
printf '#!/bin/sh\n#SBATCH --requeue\n#SBATCH -o /dev/null\n%s\n' \
  'if [ -s '"$tmp"'/first.pid ]; then
  if kill -0 "$(cat '"$tmp"'/first.pid)" 2>/dev/null; then echo alive; else echo dead; fi > '"$tmp"'/second.txt
  exit 0
fi
echo $$ > '"$tmp"'/first.pid
while true; do sleep 0.2; done' > "$tmp/job.sh"
id=$("$bin/gsched" sbatch --parsable "$tmp/job.sh") || fail "sbatch: $id"
wait_for "the first attempt to start" test -s "$tmp/first.pid"
first=$(cat "$tmp/first.pid")

touch "$tmp/cut"
fenced() { grep -q 'nothing heard from gschedd: fenced, tasks killed' "$tmp/node1.log"; }
wait_for "the worker to fence itself" fenced
gone() { ! kill -0 "$first" 2>/dev/null; }
wait_for "the first attempt's task to be killed" gone
moved() { grep -q 'node=node1 fence_ms=3000 its worker has fenced itself by now' "$tmp/gschedd.log"; }
wait_for "gschedd to move the job" moved
rm -f "$tmp/cut"

wait_for "the second attempt" test -s "$tmp/second.txt"
[ "$(cat "$tmp/second.txt")" = dead ] || fail "the first attempt was alive when the second ran"
fence_at=$(grep -m1 -o '^ts=[^ ]*' <(grep 'fenced, tasks killed' "$tmp/node1.log"))
move_at=$(grep -m1 -o '^ts=[^ ]*' <(grep 'its worker has fenced itself by now' "$tmp/gschedd.log"))
[[ "$fence_at" < "$move_at" ]] || fail "gschedd moved the job ($move_at) before the worker fenced ($fence_at)"
echo "$name: ok"
