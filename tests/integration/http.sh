#!/usr/bin/env bash
# http.sh BIN_DIR SRC_DIR: gschedd's HTTP server (scheduler/http.h) on a real gschedd and
# gsched-workerd on loopback in a temporary directory, fetched with python3's urllib.
#   - http = "127.0.0.1:0": gschedd logs the port it bound and writes it to
#     STATE_DIR/http.addr, which the test polls for.
#   - /metrics parses as the text exposition format 0.0.4 (every sample `name{labels}
#     value`, after its family's HELP and TYPE, families not split) and, with a job running
#     on one of the node's two GPUs, has the node, the job's GPU with its job and user, the
#     queue depth and the counters; /api/v1/nodes, /api/v1/jobs and /api/v1/jobs/ID show the
#     node, the job and who holds which GPU; once the job has ended it shows only with ?all=1.
#   - An unknown path and an unknown job are 404, a POST 405 with Allow, HEAD works.
#   - A second gschedd whose HTTP port is taken logs one error line and still schedules.
#   - On SIGTERM http.addr is removed; no sanitizer report in any log.
# Polls with deadlines, never bare sleeps.
name="http"
. "$(dirname "$0")/../daemons.sh" "$(cd "$1" && pwd)" "$(cd "$2" && pwd)"
work=$tmp/work
gates=$tmp/gates
mkdir -p "$work" "$gates" "$tmp/state" || exit 1
cd "$work" || exit 1

# httpc.py get|status|head|check: a tiny HTTP client and exposition-format checker.
cat > "$tmp/httpc.py" << 'PY'
import re, sys, urllib.error, urllib.request

def fetch(method, url):
    req = urllib.request.Request(url, method=method, data=b"x=1" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(\{%s(?:,%s)*\})? (\S+)$" % (NAME, LABEL, LABEL))

def family_of(name, types):
    if name in types:
        return name
    for suffix in ("_sum", "_count", "_bucket"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("summary", "histogram"):
            return base
    return None

def check(text):
    """Every line a HELP, a TYPE or a sample of the family whose HELP and TYPE came last."""
    assert text.endswith("\n"), "no final newline"
    helps, types, current = set(), {}, None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d: %r" % (n, line)
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            assert re.fullmatch(NAME, name) and name not in helps, where
            helps.add(name)
            current = name
        elif line.startswith("# TYPE "):
            parts = line.split(" ")
            assert len(parts) == 4 and parts[2] == current and parts[2] not in types, where
            assert parts[3] in ("counter", "gauge", "summary", "histogram", "untyped"), where
            types[parts[2]] = parts[3]
        else:
            m = SAMPLE.match(line)
            assert m, "not a sample: " + where
            assert family_of(m.group(1), types) == current, "outside its family: " + where
            float(m.group(3))  # NaN, +Inf, -Inf and numbers all parse
    assert helps == set(types), "HELP without TYPE"
    return len(types)

mode, url = sys.argv[1], sys.argv[2]
if mode == "get":
    status, headers, body = fetch("GET", url)
    if status != 200:
        sys.exit("%s: status %d: %s" % (url, status, body))
    print(body, end="")
elif mode == "status":
    status, headers, body = fetch(sys.argv[3], url)
    print(status, headers.get("Allow", ""), headers.get("Content-Type", ""))
elif mode == "check":
    status, headers, body = fetch("GET", url)
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    print(check(body), "families")
PY
hp() { python3 "$tmp/httpc.py" "$@"; }

write_config 'heartbeat_interval = "1s"' 'kill_grace = "1s"' 'http = "127.0.0.1:0"' \
  '[worker]' "log_dir = \"$tmp/state\""
"$bin/gschedd" --config "$tmp/gsched.toml" 2>>"$tmp/gschedd.log" &
sched=$!
pids+=("$sched")
wait_for "gschedd to write http.addr" test -s "$tmp/state/http.addr"
addr=$(cat "$tmp/state/http.addr")
[[ $addr =~ ^127\.0\.0\.1:[0-9]+$ ]] && [ "${addr#*:}" != 0 ] || fail "http.addr holds '$addr'"
grep -q "http=$addr listening" "$tmp/gschedd.log" || fail "no 'http=$addr listening' line"
url=http://$addr

"$bin/gsched-workerd" --config "$tmp/gsched.toml" --scheduler 127.0.0.1:"$port" --name node1 \
  --address 127.0.0.1 --gpus 2 --cli-socket "$tmp/node1.sock" 2>"$tmp/node1.log" &
w1=$!
pids+=("$w1")
node_up() { hp get "$url/metrics" | grep -qx 'gsched_node_up{node="node1"} 1'; }
wait_for "node1 up in /metrics" node_up

# A job on one GPU that runs until its gate opens.
cat > job.toml << EOF
name = "web"
[resources]
nodes = 1
gpus_per_node = 1
[run]
script = """
i=0; while [ ! -e $gates/web ] && [ \$i -lt 600 ]; do sleep 0.05; i=\$((i+1)); done
"""
EOF
out=$("$bin/gsched" submit job.toml --json 2>&1) || fail "submit refused: $out"
job=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["job_id"])' "$out") ||
  fail "submit: $out"
"$bin/gsched" wait "$job" --start --timeout 30s >/dev/null || fail "job $job did not start"
user=$(id -un)

hp check "$url/metrics" > "$tmp/check.txt" 2>&1 || fail "bad exposition format: $(cat "$tmp/check.txt")"
hp get "$url/metrics" > "$tmp/metrics.txt" || fail "GET /metrics failed"
for line in 'gsched_node_up{node="node1"} 1' 'gsched_node_gpus{node="node1"} 2' \
  'gsched_node_gpus_allocated{node="node1"} 1' 'gsched_nodes{state="up"} 1' \
  'gsched_jobs{state="RUNNING",partition="main"} 1' \
  'gsched_jobs{state="PENDING",partition="main"} 0' \
  "gsched_gpu_allocated{node=\"node1\",gpu=\"0\",job=\"$job\",user=\"$user\"} 1" \
  'gsched_jobs_submitted_total 1' 'gsched_jobs_started_total 1'; do
  grep -qxF "$line" "$tmp/metrics.txt" || fail "no line '$line' in: $(cat "$tmp/metrics.txt")"
done
grep -qE '^gsched_sched_pass_seconds_count [1-9][0-9]*$' "$tmp/metrics.txt" ||
  fail "no planning pass counted: $(grep pass "$tmp/metrics.txt")"

# expect_json PATH EXPR: the Python expression over the JSON at PATH (d) holds.
expect_json() {
  hp get "$url$1" > "$tmp/api.json" || fail "GET $1 failed"
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/api.json" "$2" ||
    fail "GET $1: expected $2; got: $(cat "$tmp/api.json")"
}
expect_json /api/v1/nodes "[(n['name'], n['state'], n['gpus_total'], n['gpus_free'], n['cores_total'] > 0) for n in d['nodes']] == [('node1', 'up', 2, 1, True)]"
expect_json /api/v1/nodes "[(g['index'], g['job']) for g in d['nodes'][0]['gpus']] == [(0, $job), (1, None)]"
expect_json /api/v1/jobs "[(j['id'], j['state'], j['name'], j['user'], j['partition']) for j in d['jobs']] == [($job, 'RUNNING', 'web', '$user', 'main')]"
expect_json /api/v1/jobs "d['jobs'][0]['allocation'][0]['node'] == 'node1' and d['jobs'][0]['allocation'][0]['gpus'] == [0] and d['jobs'][0]['start_ms'] > 0 and d['jobs'][0]['end_ms'] is None"
expect_json "/api/v1/jobs/$job" "d['id'] == $job and d['gpus_allocated'] == 1 and d['history'][-1]['state'] == 'RUNNING'"

# What no route answers.
[ "$(hp status "$url/nope" GET)" = "404  application/json" ] || fail "unknown path: $(hp status "$url/nope" GET)"
[ "$(hp status "$url/api/v1/jobs/987654" GET)" = "404  application/json" ] || fail "unknown job not 404"
[ "$(hp status "$url/api/v1/jobs/x1" GET)" = "400  application/json" ] || fail "bad job id not 400"
st=$(hp status "$url/metrics" POST)
[ "$st" = "405 GET, HEAD application/json" ] || fail "POST /metrics: $st"
st=$(hp status "$url/metrics" HEAD)
[[ $st == "200  text/plain; version=0.0.4"* ]] || fail "HEAD /metrics: $st"

# Once the job has ended it is only listed with ?all=1, and counted as COMPLETED.
touch "$gates/web"
"$bin/gsched" wait "$job" --timeout 30s >/dev/null || fail "job $job did not complete"
expect_json /api/v1/jobs "d['jobs'] == []"
expect_json "/api/v1/jobs?all=1" "[(j['id'], j['state'], j['exit_code']) for j in d['jobs']] == [($job, 'COMPLETED', 0)]"
completed() {
  hp get "$url/metrics" | grep -qxF 'gsched_jobs{state="COMPLETED",partition="main"} 1'
}
wait_for "the job counted as COMPLETED" completed

# A second gschedd on the same HTTP address: one error line, and it schedules all the same.
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/state2" || exit 1
printf '[scheduler]\nhost = "127.0.0.1"\nport = %s\nsocket = "%s"\nstate_dir = "%s"\nhttp = "%s"\nheartbeat_interval = "1s"\nauth_key = "%s"\n[worker]\nallow_root_jobs = true\nlog_dir = "%s"\n' \
  "$port2" "$tmp/second.sock" "$tmp/state2" "$addr" "$tmp/gsched.key" "$tmp/state2" > "$tmp/second.toml"
"$bin/gschedd" --config "$tmp/second.toml" 2>>"$tmp/second.log" &
sched2=$!
pids+=("$sched2")
wait_for "the second gschedd to listen" test -S "$tmp/second.sock"
grep -qE "level=error .*http=$addr error=\".+\" http listener not started" "$tmp/second.log" ||
  fail "no error line for the taken port in: $(cat "$tmp/second.log")"
[ ! -e "$tmp/state2/http.addr" ] || fail "the second gschedd wrote http.addr"
"$bin/gsched-workerd" --config "$tmp/second.toml" --scheduler 127.0.0.1:"$port2" --name node2 \
  --address 127.0.0.1 --gpus 1 --cli-socket "$tmp/node2.sock" 2>"$tmp/node2.log" &
w2=$!
pids+=("$w2")
node2_up() { GSCHED_SOCKET=$tmp/second.sock "$bin/gsched" nodes | grep -qE '^node2 +up '; }
wait_for "node2 up on the second gschedd" node2_up
printf 'name = "plain"\n[resources]\nnodes = 1\n[run]\ncommand = ["true"]\n' > plain.toml
out=$(GSCHED_SOCKET=$tmp/second.sock "$bin/gsched" submit plain.toml --json 2>&1) ||
  fail "submit to the second gschedd refused: $out"
job2=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["job_id"])' "$out") ||
  fail "submit: $out"
GSCHED_SOCKET=$tmp/second.sock "$bin/gsched" wait "$job2" --timeout 30s >/dev/null ||
  fail "the second gschedd did not run job $job2"
hp get "$url/metrics" > /dev/null || fail "the first gschedd stopped serving"

kill -TERM "$w1" "$w2" "$sched2" "$sched"
wait "$w1" || fail "node1's worker exited non-zero"
wait "$w2" || fail "node2's worker exited non-zero"
wait "$sched2" || fail "the second gschedd exited non-zero"
wait "$sched" || fail "gschedd exited non-zero"
[ ! -e "$tmp/state/http.addr" ] || fail "http.addr left behind"
if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp"/*.log; then
  fail "sanitizer report in a daemon's log"
fi
echo "http: ok"
