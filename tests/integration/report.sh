#!/usr/bin/env bash
# report.sh BIN_DIR SRC_DIR: sreport cluster utilization against a `gsched up` cluster of
# two workers. Over a window of whole seconds after both nodes are up: a one-core job runs
# for two seconds, node2 is drained until the clock passes the next second, then resumed. The report counts every core of both nodes for the whole
# window (reported), the job's core for exactly its run (allocated), node2's cores for the
# time it was drained (down, between the bounds the test measured around its commands),
# node1's for the time a MAINT reservation held it (planned down, likewise), and the rest as
# idle; -P and -t seconds print the same in Slurm's layout; per account and user
# (AccountUtilizationByUser, TopUsage) each job counts for its own; and after a gschedd
# restart the history it reads from its database gives the same answer.
name="integration_report"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 2 --gpus-per-node 0 --share-cpus
node_field() { # node_field NODE FIELD: the field of `gsched nodes --json NODE`
  "$bin/gsched" nodes --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0][sys.argv[1]])' "$2"
}
wait_for "both nodes up" 15 eval '[ "$(node_field node1 state)" = up ] && [ "$(node_field node2 state)" = up ]'
cores1=$(node_field node1 cores_total) && cores2=$(node_field node2 cores_total) || fail "the nodes' cores"
now_ms() { date +%s%3N; }
iso() { date -d "@$1" +%Y-%m-%dT%H:%M:%S; }
# A second boundary ahead, once the clock has passed it.
next_second() {
  local s=$(($(date +%s) + 1))
  wait_for "the clock to reach $s" 5 eval "[ \$(date +%s) -ge $s ]"
  echo "$s"
}

start=$(next_second)
job=$("$bin/gsched" sbatch --parsable -c 1 -o /dev/null --wrap="sleep 2" 2>&1) || fail "sbatch: $job"
job=${job%%;*}
acct=$("$bin/gsched" sbatch --parsable -c 1 -A physics -o /dev/null --wrap=true 2>&1) ||
  fail "sbatch -A physics: $acct"
acct=${acct%%;*}
wait_end "$job" || fail "the job failed"
wait_end "$acct" || fail "physics' job failed"
ran_ms=$(jq "$job" 'j["end_time_ms"] - j["start_time_ms"]')
acct_ms=$(jq "$acct" 'j["end_time_ms"] - j["start_time_ms"]')
d0=$(now_ms)
"$bin/gsched" scontrol update NodeName=node2 State=DRAIN Reason=report-test || fail "drain node2"
d1=$(now_ms)
wait_for "node2 drained" 10 eval '[ "$(node_field node2 state)" != up ]'
next_second > /dev/null # drained for a second or so
r0=$(now_ms)
"$bin/gsched" scontrol update NodeName=node2 State=RESUME || fail "resume node2"
wait_for "node2 up again" 10 eval '[ "$(node_field node2 state)" = up ]'
r1=$(now_ms)
# node1 in a MAINT reservation for a second or so: planned down, not idle (and not down)
m0=$(now_ms)
"$bin/gsched" scontrol create reservation ReservationName=fix StartTime=now Duration=60 \
  Nodes=node1 Users=root Flags=MAINT > /dev/null || fail "create the MAINT reservation"
m1=$(now_ms)
next_second > /dev/null
e0=$(now_ms)
"$bin/gsched" scontrol delete ReservationName=fix || fail "delete the MAINT reservation"
e1=$(now_ms)
end=$(next_second)

# report WORDS OPTIONS...: that sreport report over the window (WORDS split: "cluster utilization").
report() {
  local words=$1
  shift
  # shellcheck disable=SC2086
  "$bin/gsched" sreport "$@" $words start="$(iso "$start")" end="$(iso "$end")"
}
out=$(report "cluster utilization" --json -T cpu,gres/gpu 2>&1) || fail "sreport --json: $out"
check() { # check JSON: the figures against what the test did
  python3 - "$1" "$start" "$end" "$cores1" "$cores2" "$ran_ms" "$acct_ms" "$d0" "$d1" "$r0" "$r1" \
    "$m0" "$m1" "$e0" "$e1" <<'PY' || fail "sreport's figures: $1"
import json, sys
r = json.loads(sys.argv[1])
start, end, c1, c2, ran, acct, d0, d1, r0, r1, m0, m1, e0, e1 = (int(x) for x in sys.argv[2:])
cpu = next(t for t in r["tres"] if t["name"] == "cpu")
gpu = next(t for t in r["tres"] if t["name"] == "gres/gpu")
win = (end - start) * 1000
assert r["start_ms"] == start * 1000 and r["end_ms"] == end * 1000, r
assert 0 < r["known_since_ms"] < start * 1000, r
assert cpu["reported"] == (c1 + c2) * win, cpu
assert cpu["allocated"] == ran + acct, (cpu, ran, acct)
assert c2 * (r0 - d1) <= cpu["down"] <= c2 * (r1 - d0), (cpu, d0, d1, r0, r1)
assert c1 * (e0 - m1) <= cpu["plnd_down"] <= c1 * (e1 - m0), (cpu, m0, m1, e0, e1)
assert cpu["idle"] == cpu["reported"] - cpu["allocated"] - cpu["down"] - cpu["plnd_down"], cpu
assert gpu["reported"] == 0 and gpu["allocated"] == 0, gpu
PY
}
check "$(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
for t in r["tres"]:
    for k in ("allocated", "down", "plnd_down", "idle", "reported"):
        t[k] = t.pop(k + "_ms")
print(json.dumps(r))' "$out")"

# Slurm's layout: -P, seconds, the same figures rounded.
got=$(report "cluster utilization" -P -n -t seconds 2>&1) || fail "sreport -P: $got"
want=$(python3 -c '
import json, sys
t = next(t for t in json.loads(sys.argv[1])["tres"] if t["name"] == "cpu")
s = lambda k: "%.0f" % (t[k + "_ms"] / 1000)
print("|".join(["gsched", s("allocated"), s("down"), s("plnd_down"), s("idle"), s("reported")]))' "$out")
[ "$got" = "$want" ] || fail "sreport -P -n -t seconds: $got, want $want"

# Per account and user: root's job under no account, and the one under physics.
users=$(report "cluster AccountUtilizationByUser" --json 2>&1) || fail "AccountUtilizationByUser: $users"
python3 - "$users" "$ran_ms" "$acct_ms" <<'PY' || fail "the users' figures: $users"
import json, sys
u = json.loads(sys.argv[1])["users"]
ran, acct = int(sys.argv[2]), int(sys.argv[3])
assert u == [{"account": "", "user": "root", "cpu_ms": ran, "gpu_ms": 0},
             {"account": "physics", "user": "root", "cpu_ms": acct, "gpu_ms": 0}], u
PY
top=$(report "user TopUsage" -P -n -t seconds 2>&1) || fail "user TopUsage: $top"
case $top in "gsched|root|"*"|root,physics|"*) ;; *) fail "user TopUsage -P: $top" ;; esac

# The history is gschedd's database's: a restart answers the same.
restart_sched 2
again=$(report "cluster utilization" --json -T cpu,gres/gpu 2>&1) || fail "sreport after a restart: $again"
[ "$again" = "$out" ] || fail "after a restart: $again, before: $out"
check_logs
stop_cluster
echo "$name: passed"
