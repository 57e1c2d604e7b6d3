#!/usr/bin/env bash
# login.sh BIN_DIR SRC_DIR: the CLI on a login node (docs/cluster.md, "Login nodes"). gschedd
# and node1 in network namespaces of their own (lib.sh), and a third, "login", that runs no
# daemon of gsched: there the CLI reaches gschedd only over TCP at scheduler.cli_port
# (GSCHED_SERVER, GSCHED_SOCKET unset), proving its user with a MUNGE credential. Three
# munged: one for gschedd's host, one for the login host with the same key, one with
# another key. As the unprivileged user nobody on the login host: `sbatch --wait` runs a job
# as nobody (its output says `id -u` 65534), squeue lists root's job, `scancel` of root's
# job is refused and of its own works. Refused, each with its reason in gschedd's log and
# gschedd serving the next CLI after each: a CLI whose munged is not there (it says
# "munge:"), a credential of the other key, and, from a raw client (Python, the frames by
# hand): a credential replayed on a second connection, one made for another connection's
# nonce, and a Hello with none. The raw client's first, honest exchange is answered, so
# its frames are right. Last, with gschedd's munged stopped, gschedd says it cannot check.
name="login"
. "$(dirname "$0")/lib.sh"

if ! command -v munged >/dev/null 2>&1 || ! command -v munge >/dev/null 2>&1; then
  skip "no munged/munge (Debian package munge)"
fi
"$bin/gsched" --version | grep -q 'munge=yes' || skip "gsched was built without libmunge"
nobody=$(id -u nobody 2>/dev/null) || skip "no user nobody"
command -v setpriv >/dev/null 2>&1 || skip "no setpriv"

netns_up 2 # node2's namespace is the login host: no worker there
login_ns=${netns_node[2]}
cli_port=7701
chmod 0755 "$tmp" # nobody reaches the munge sockets and its directory below
mkdir -p "$tmp/munge" "$tmp/login"
chown "$nobody" "$tmp/login"
(umask 077 && head -c 64 /dev/urandom > "$tmp/munge/cluster.key" &&
  head -c 64 /dev/urandom > "$tmp/munge/other.key")

# start_munged NAME KEY NAMESPACE: a munged on $tmp/munge/NAME.sock, in that namespace (so
# that cleanup ends it); its log $tmp/munged-NAME.log.
start_munged() {
  nsenter --net=/run/netns/"$3" munged --foreground --force --key-file "$tmp/munge/$2.key" \
    --socket "$tmp/munge/$1.sock" --pid-file "$tmp/munge/$1.pid" \
    --seed-file "$tmp/munge/$1.seed" 2>>"$tmp/munged-$1.log" &
  disown "$!"
  wait_for "munged $1" 10 test -S "$tmp/munge/$1.sock"
}
start_munged sched cluster "$netns_sched"
start_munged login cluster "$login_ns"
start_munged other other "$login_ns"

write_config 'heartbeat_interval = "1s"' "cli_port = $cli_port" \
  "munge_socket = \"$tmp/munge/sched.sock\""
start_gschedd
start_worker 1 --gpus 1
wait_for "node1 up" 20 node_state node1 up

# as_login MUNGE_NAME COMMAND...: COMMAND on the login host as nobody, in $tmp/login, with
# only GSCHED_SERVER and that munged's socket to go by.
as_login() {
  local munge=$1
  shift
  (cd "$tmp/login" && env -u GSCHED_SOCKET GSCHED_SERVER="$sched_ip:$cli_port" \
    GSCHED_MUNGE_SOCKET="$tmp/munge/$munge.sock" \
    nsenter --net=/run/netns/"$login_ns" \
    setpriv --reuid="$nobody" --regid="$nobody" --clear-groups "$@")
}
serves() { as_login login "$bin/gsched" squeue -h >/dev/null 2>&1; }

# A job of root's, from gschedd's host (the Unix socket), that runs until told.
root_job=$(cd "$tmp/work" &&
  "$bin/gsched" sbatch --parsable --wrap "while [ ! -e $tmp/stop ]; do sleep 0.1; done") ||
  fail "root's sbatch failed: $root_job"
wait_for "root's job to run" 20 is "$root_job" 'j["state"] == "RUNNING"'

# sbatch --wait from the login host: the job is nobody's, its output says so.
out=$(as_login login "$bin/gsched" sbatch --wait --parsable --wrap 'id -u' 2>&1) ||
  fail "sbatch --wait from the login host failed: $out"
job=${out%%$'\n'*}
[ "$(cat "$tmp/login/slurm-$job.out" 2>/dev/null)" = "$nobody" ] ||
  fail "job $job's id -u: '$(cat "$tmp/login/slurm-$job.out" 2>&1)', expected $nobody"
expect "$job" "j[\"state\"] == \"COMPLETED\" and j[\"user\"][\"uid\"] == $nobody"

# squeue lists root's job; scancel of it is refused, and it runs on.
out=$(as_login login "$bin/gsched" squeue -h -o '%i %u' 2>&1) || fail "squeue from the login host: $out"
grep -qx "$root_job root" <<<"$out" || fail "squeue from the login host: no '$root_job root' in: $out"
if out=$(as_login login "$bin/gsched" scancel "$root_job" 2>&1); then
  fail "nobody's scancel of root's job $root_job succeeded: $out"
fi
grep -q "job id $root_job: .*ermission denied" <<<"$out" || fail "scancel's refusal is not one: $out"
is "$root_job" 'j["state"] == "RUNNING"' || fail "root's job $root_job stopped after nobody's scancel"

# Its own job, cancelled from the login host once its task runs (a cancel that reaches the
# worker before its task has started is not this test's subject).
own=$(as_login login "$bin/gsched" sbatch --parsable --wrap "touch $tmp/login/own; sleep 60" 2>&1) ||
  fail "sbatch: $own"
wait_for "job $own's task to start" 20 test -e "$tmp/login/own"
as_login login "$bin/gsched" scancel "$own" >"$tmp/scancel.out" 2>&1 ||
  fail "nobody's scancel of its own job $own: $(cat "$tmp/scancel.out")"
wait_for "job $own cancelled" 20 is "$own" 'j["state"] == "CANCELLED"'

# No munged on the login host: the CLI says so, and sends nothing.
if out=$(as_login absent "$bin/gsched" squeue 2>&1); then fail "squeue without munged worked: $out"; fi
grep -q "munge: .*absent.sock" <<<"$out" || fail "squeue without munged: unclear error: $out"
serves || fail "gschedd stopped serving"

# A credential of another key: refused by gschedd's munged.
if out=$(as_login other "$bin/gsched" squeue 2>&1); then fail "another key's credential worked: $out"; fi
grep -q "MUNGE credential refused" <<<"$out" || fail "another key's credential: unclear error: $out"
grep -q "reason=invalid .*login cli refused" "$tmp/gschedd.log" || fail "no reason=invalid logged"
serves || fail "gschedd stopped serving after another key's credential"

# The raw client: a credential replayed, one for another connection's nonce, none at all.
nsenter --net=/run/netns/"$login_ns" "$py" - "$sched_ip" "$cli_port" "$tmp/munge/login.sock" \
  >"$tmp/raw.out" 2>&1 <<'PY' || fail "raw client: $(cat "$tmp/raw.out")"
import socket, subprocess, sys
host, port, munge_sock = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out

def field(num, wire, value):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(value)
    if wire == 5:
        return key + value.to_bytes(4, "little")
    return key + varint(len(value)) + value

def fields(buf):
    """(number, value) of each field: ints for varints and fixed32, bytes otherwise."""
    i = 0
    while i < len(buf):
        key = 0; shift = 0
        while True:
            b = buf[i]; i += 1; key |= (b & 0x7F) << shift; shift += 7
            if b < 0x80: break
        num, wire = key >> 3, key & 7
        if wire == 0:
            v = 0; shift = 0
            while True:
                b = buf[i]; i += 1; v |= (b & 0x7F) << shift; shift += 7
                if b < 0x80: break
        elif wire == 5:
            v = int.from_bytes(buf[i:i + 4], "little"); i += 4
        elif wire == 1:
            v = int.from_bytes(buf[i:i + 8], "little"); i += 8
        else:
            n = 0; shift = 0
            while True:
                b = buf[i]; i += 1; n |= (b & 0x7F) << shift; shift += 7
                if b < 0x80: break
            v = buf[i:i + n]; i += n
        yield num, v

def frame(payload):
    return len(payload).to_bytes(4, "big") + payload

def read_frame(s):
    def exact(n):
        data = b""
        while len(data) < n:
            more = s.recv(n - len(data))
            if not more:
                return None
            data += more
        return data
    head = exact(4)
    return exact(int.from_bytes(head, "big")) if head else None

def hello(cred):
    h = field(1, 5, 0x47534348) + field(2, 0, 1) + field(3, 0, 10) + field(4, 0, 3)
    h += field(5, 2, b"raw-client")
    if cred:
        h += field(8, 2, cred)
    return field(16, 2, h)

QUEUE = field(1, 0, 1) + field(42, 2, b"")  # request 1: a QueueRequest

def connect():
    """A connection and gschedd's nonce from its Hello."""
    s = socket.create_connection((host, port), timeout=20)
    env = dict(fields(read_frame(s)))
    return s, dict(fields(env[16]))[7]

def credential(nonce):
    return subprocess.run(["munge", "-S", munge_sock], input=b"gsched-cli-1" + nonce,
                          capture_output=True, check=True).stdout.strip()

def exchange(s, cred):
    s.sendall(frame(hello(cred)) + frame(QUEUE))
    env = dict(fields(read_frame(s) or b""))
    s.close()
    if 18 in env:
        return "error: " + dict(fields(env[18])).get(2, b"").decode()
    return "queue_reply" if 43 in env else f"other: {sorted(env)}"

s, nonce = connect()
cred = credential(nonce)
r = exchange(s, cred)
assert r == "queue_reply", f"honest exchange: {r}"
s, _ = connect()
r = exchange(s, cred)
assert r.startswith("error: MUNGE credential refused") and "eplayed" in r, f"replayed: {r}"
s, nonce = connect()
s2, nonce2 = connect()
r = exchange(s, credential(nonce2))
assert "not made for this connection" in r, f"another connection's nonce: {r}"
s2.close()
s, _ = connect()
r = exchange(s, None)
assert "MUNGE credential only" in r, f"no credential: {r}"
print("raw client: ok")
PY
for reason in replayed not_for_this_connection no_credential; do
  grep -q "reason=$reason .*login cli refused" "$tmp/gschedd.log" || fail "no reason=$reason logged"
done
serves || fail "gschedd stopped serving after the raw client"

# gschedd's own munged gone: it cannot check credentials, and says so.
kill "$(cat "$tmp/munge/sched.pid")" || fail "cannot stop gschedd's munged"
wait_for "gschedd's munged to stop" 20 test ! -S "$tmp/munge/sched.sock"
if out=$(as_login login "$bin/gsched" squeue 2>&1); then fail "squeue worked without gschedd's munged: $out"; fi
grep -q "gschedd cannot check MUNGE credentials" <<<"$out" || fail "without gschedd's munged: $out"
grep -q "reason=munged_unreachable .*login cli refused" "$tmp/gschedd.log" ||
  fail "no reason=munged_unreachable logged"

touch "$tmp/stop"
wait_for "root's job to end" 20 is "$root_job" 'j["state"] == "COMPLETED"'
kill_wait TERM "${worker_pid[1]}" "$sched_pid"
check_logs
echo "$name: ok"
