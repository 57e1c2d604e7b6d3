#!/usr/bin/env bash
# cluster.sh BIN_DIR SRC_DIR: `gsched up --netns` itself (issue 20), on the integration
# tests' helpers (../integration/lib.sh with GSCHED_TEST_NETNS=1): gschedd and two workers
# each in network, UTS and mount namespaces of their own on one bridge.
#   - every node has its host name and address; a 2-node job's tasks see their node's name,
#     resolve every node (and gschedd) through the cluster's hosts file, and both listen on
#     one port at once, as two hosts can;
#   - the machine itself reaches gschedd's status page over the bridge;
#   - a second cluster beside it gets another subnet; one asked for on a subnet in use is
#     refused, as is --netns for a user who is not root, and --subnet without --netns;
#   - kill -9 of gschedd: `gsched up` brings it back in its namespace; kill -9 of every
#     daemon: `gsched down` still removes the namespaces, the links and the bridge.
name="netns_cluster"
. "$(dirname "$0")/../integration/lib.sh"
export GSCHED_TEST_NETNS=1
start_cluster --workers 2 --gpus-per-node 0
tag=$(awk '$1 == "tag" { print $2 }' "$state/netns")
[ -n "$tag" ] || fail "no tag in $state/netns: $(cat "$state/netns")"
for ns in sched node1 node2; do
  ip netns list | grep -q "^gsched-$tag-$ns\b" || fail "no namespace gsched-$tag-$ns"
done
a1=$(node_addr node1) a2=$(node_addr node2) as=$(node_addr gschedd)
[ -n "$a1" ] && [ -n "$a2" ] && [ -n "$as" ] && [ "$a1" != "$a2" ] || fail "addresses: $(cat "$state/hosts")"
# gschedd's status page, on its own address, from this machine.
http=$(cat "$state/http.addr")
case $http in "$as":*) ;; *) fail "the status page is at $http, not on gschedd's address $as" ;; esac
python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' \
  "http://$http/metrics" || fail "this machine does not reach http://$http/ over the bridge"

# Each task: its host name, the addresses it resolves, and a listener on port 5555 that
# the other node's task connects to (both bound at once: one port, two hosts).
job_file net.toml "name = \"net\"
[resources]
nodes = 2
[run]
script = '''
me=\$(hostname)
echo \"host \$me \$(getent hosts \$me | cut -d' ' -f1) node1 \$(getent hosts node1 | cut -d' ' -f1) node2 \$(getent hosts node2 | cut -d' ' -f1) gschedd \$(getent hosts gschedd | cut -d' ' -f1)\"
other=node1; [ \"\$me\" = node1 ] && other=node2
$py - \"\$other\" <<'PY'
import socket, sys, time
srv = socket.create_server((\"\", 5555))
srv.settimeout(20)
deadline = time.time() + 20
while True:
    try:
        c = socket.create_connection((sys.argv[1], 5555), timeout=2)
        break
    except OSError:
        if time.time() > deadline:
            raise
        time.sleep(0.05)
c.sendall(socket.gethostname().encode())
peer, _ = srv.accept()
print(\"heard\", peer.recv(64).decode(), flush=True)
PY
'''
stdout = \"net-%t.out\""
j=$(submit net.toml)
wait_end "$j" 60 || fail "the 2-node job failed: $(jq "$j" 'j'); $(cat "$work"/net-*.out)"
for i in 0 1; do
  n=node$((i + 1)) o=node$((2 - i))
  grep -qx "host $n $(node_addr "$n") node1 $a1 node2 $a2 gschedd $as" "$work/net-$i.out" ||
    fail "task $i's view: $(cat "$work/net-$i.out")"
  grep -qx "heard $o" "$work/net-$i.out" || fail "task $i heard nothing from $o: $(cat "$work/net-$i.out")"
done

# A second cluster beside the first: another subnet; a subnet in use is refused.
second=$tmp/second
out=$("$bin/gsched" up --netns --workers 1 --gpus-per-node 0 --state "$second" 2>&1) ||
  fail "a second --netns cluster: $out"
grep -q "^subnet ${a1%.*}\$" "$second/netns" && fail "both clusters on ${a1%.*}.0/24"
"$bin/gsched" down --state "$second" > /dev/null 2>&1 || fail "down of the second cluster"
out=$("$bin/gsched" up --netns --subnet "${a1%.*}" --workers 1 --state "$tmp/third" 2>&1) &&
  fail "a cluster on a subnet in use started: $out"
case $out in *"is in use on this machine"*) ;; *) fail "subnet in use: $out" ;; esac
out=$("$bin/gsched" up --subnet 10.1.2 --state "$tmp/third" 2>&1) && fail "--subnet alone: $out"
case $out in *"--subnet is --netns's"*) ;; *) fail "--subnet alone: $out" ;; esac
if command -v setpriv > /dev/null; then
  mkdir -m 0777 "$tmp/nobody" && chmod 0755 "$tmp"
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/gsched" up --netns \
    --state "$tmp/nobody" 2>&1) && fail "--netns as nobody started: $out"
  case $out in *"--netns needs root"*) ;; *) fail "--netns as nobody: $out" ;; esac
fi
ip netns list | grep -q "^gsched-$tag-" || fail "the refusals touched the first cluster"

# kill -9 of gschedd: `gsched up` starts it again, in its namespace.
sched=$(cat "$state/gschedd.pid")
kill -9 "$sched"
wait_for "gschedd to die" 10 sh -c "! kill -0 $sched"
out=$("$bin/gsched" up --state "$state" 2>&1) || fail "gschedd not revived: $out"
[ "$(readlink "/proc/$(cat "$state/gschedd.pid")/ns/net")" = "$(ip netns exec "gsched-$tag-sched" readlink /proc/self/ns/net)" ] ||
  fail "the revived gschedd is not in its namespace"
j=$(submit net.toml)
wait_end "$j" 60 || fail "a job after the revival failed: $(jq "$j" 'j')"

# kill -9 of every daemon: down still removes everything.
for f in "$state"/*.pid; do kill -9 "$(cat "$f")"; done
out=$("$bin/gsched" down --state "$state" 2>&1) || fail "down after kill -9: $out"
ip netns list | grep -q "^gsched-$tag-" && fail "namespaces left: $(ip netns list)"
ip link show "gs${tag}br" > /dev/null 2>&1 && fail "bridge gs${tag}br left"
[ -e "$state/netns" ] && fail "$state/netns left"
check_logs
echo "$name: passed"
