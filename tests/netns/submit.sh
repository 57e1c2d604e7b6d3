#!/usr/bin/env bash
# submit.sh BIN_DIR SRC_DIR: a submit whose reply is lost, retried by the CLI with the same
# client key, returns the job the first try made, even when gschedd crashed in between.
# gschedd and node1 in network namespaces of their own (lib.sh). The CLI talks to gschedd
# over its Unix socket, so the lost reply is made there: the CLI is pointed at a relay
# socket (a Python proxy in this script) that passes the handshake and the request through
# and, when gschedd's reply to the first connection's request arrives, kills gschedd with
# -9 and drops the reply. gschedd replies to a submit only once the job is stored, so this
# is a gschedd that crashed after its commit while replying: the CLI sees the connection
# close with no answer. While the CLI retries (GSCHED_SUBMIT_KEY set, as a script would; the
# CLI keeps one key for all its retries anyway), gschedd is started again on its state.
# Then: the CLI exits 0 with "retried": true and a job id; gschedd holds exactly one job, that
# one (the retry queued nothing); it runs once on node1 and completes. The same file
# submitted with another key is another job, so it is the key that matched, not the file.
name="submit"
. "$(dirname "$0")/lib.sh"

netns_up 1
write_config 'heartbeat_interval = "1s"' 'heartbeat_misses = 3' 'fence_timeout = "10s"'
start_gschedd
echo "$sched_pid" > "$tmp/sched.pid"
start_worker 1 --gpus 1
wait_for "node1 up" 20 node_state node1 up

nsenter --net=/run/netns/"$netns_sched" \
  "$py" - "$tmp/proxy.sock" "$tmp/gschedd.sock" "$tmp/sched.pid" "$tmp/dropped" \
  2>"$tmp/proxy.log" <<'PY' &
import os, signal, socket, sys, threading
listen_path, upstream, pidfile, marker = sys.argv[1:5]
first = [True]
lock = threading.Lock()

def frames(sock):
    """The frames (4-byte big-endian length, payload) sock sends, whole, until it closes."""
    buf = b""
    while True:
        data = sock.recv(65536)
        if not data:
            return
        buf += data
        while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big"):
            n = 4 + int.from_bytes(buf[:4], "big")
            yield buf[:n]
            buf = buf[n:]

def pump(src, dst):
    try:
        while data := src.recv(65536):
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def serve(client):
    with lock:
        drop, first[0] = first[0], False
    up = socket.socket(socket.AF_UNIX)
    try:
        up.connect(upstream)
    except OSError:  # gschedd is down: the CLI sees a closed connection and tries again
        client.close()
        return
    threading.Thread(target=pump, args=(client, up), daemon=True).start()
    try:
        for i, frame in enumerate(frames(up)):
            if drop and i == 1:  # gschedd's Hello, then its reply: stored by now
                os.kill(int(open(pidfile).read()), signal.SIGKILL)
                open(marker, "w").write(f"reply of {len(frame)} bytes dropped\n")
                break
            client.sendall(frame)
    except OSError:
        pass
    for s in (client, up):  # shutdown, not just close: it ends pump's recv, the peer sees EOF
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

ls = socket.socket(socket.AF_UNIX)
ls.bind(listen_path)
ls.listen(8)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
disown "$!" # in gschedd's namespace, so that cleanup ends it
wait_for "the proxy to listen" 10 test -S "$tmp/proxy.sock"

cat > "$tmp/work/keyed.toml" <<EOF
name = "keyed"
[run]
script = '''
$(task_script)
'''
EOF
(cd "$tmp/work" && GSCHED_SOCKET=$tmp/proxy.sock GSCHED_SUBMIT_KEY=lost-reply-5c1e \
  "$bin/gsched" submit keyed.toml --json > "$tmp/cli.out" 2> "$tmp/cli.err"; echo $? > "$tmp/cli.rc") &
cli=$!
wait_for "the reply to be dropped and gschedd killed" 20 test -s "$tmp/dropped"
wait_for "gschedd to be gone" 20 gone "$sched_pid"
[ -e "$tmp/cli.rc" ] && fail "the CLI gave up while gschedd was down: $(cat "$tmp/cli.err")"
start_gschedd
wait "$cli"
[ "$(cat "$tmp/cli.rc")" = 0 ] || fail "the retried submit failed: $(cat "$tmp/cli.err" "$tmp/cli.out")"
job=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(f"not marked retried: {r}") if r.get("retried") is not True else print(r["job_id"])' \
  "$tmp/cli.out") || fail "the retried submit: $job"
"$bin/gsched" queue --all --json | python3 -c '
import json, sys
ids = [j["job_id"] for j in json.load(sys.stdin)]
sys.exit(0 if ids == [int(sys.argv[1])] else f"jobs {ids}, expected only {sys.argv[1]}")' "$job" ||
  fail "the retry queued another job"

wait_for "the job to end" 20 is "$job" 'j["state"] not in ("PENDING", "RUNNING", "REQUEUED")'
expect "$job" 'j["state"] == "COMPLETED" and j["allocation"][0]["node_name"] == "node1"'
[ "$(grep -c '^start' "$tmp/tasks/$job.log")" = 1 ] || fail "the job ran more than once"
other=$(GSCHED_SUBMIT_KEY=another-key-77 submit keyed.toml)
[ "$other" != "$job" ] || fail "another key was answered with job $job"

kill_wait TERM "${worker_pid[1]}" "$sched_pid"
check_logs
echo "$name: ok"
