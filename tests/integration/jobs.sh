#!/usr/bin/env bash
# jobs.sh BIN_DIR SRC_DIR: the job path end to end on a `gsched up` cluster of two workers
# with the hardware of tests/topologies/ws-4gpu.xml (4 GPUs, 16 cores each): a 2-node job's
# task environment and logs; submit --wait's exit status; gang allocation and requests no
# node can hold; EASY backfill (a short job jumps a reserved one, a long one does not), and
# with scheduler.backfill_depth = 2 (after a gschedd restart) the second blocked job's
# expected start too; time limits with SIGTERM and with SIGKILL after the kill grace; cancel of running and
# pending jobs (and by another user); dependencies; hold and release; bad job files.
# Jobs that must stay running wait on gate files; everything polls with deadlines.
name="jobs"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 2 --topology "$src/tests/topologies/ws-4gpu.xml" --heartbeat 1s \
  --kill-grace 1s

# --- a 2-node job: its tasks' environment, and `gsched logs` -----------------------------
cat > env.toml <<EOF
name = "env"
[resources]
nodes = 2
gpus_per_node = 2
[run]
tasks_per_node = 2
script = """
env
$(gate_wait env)
"""
EOF
j=$(submit env.toml)
wait_start "$j"
alloc=$(jq "$j" 'j["allocation"]') # GPU lists are known while the job runs
gate env
wait_end "$j" || fail "env job failed: $(jq "$j" 'j')"
first=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[0]["node_name"])' "$alloc")
python3 - "$j" "$alloc" "$(node_addr "$first")" <<'PY' || fail "env job's environment is wrong"
import json, sys
job, alloc, master = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
def env_of(rank):
    e = {}
    for line in open(f"gsched-{job}-{rank}.out"):
        k, sep, v = line.rstrip("\n").partition("=")
        if sep:
            e[k] = v
    return e
envs = [env_of(r) for r in range(4)]
def check(cond, what):
    if not cond:
        sys.exit(f"jobs: {what}: {json.dumps(envs, indent=1)}")
check(sorted(e["RANK"] for e in envs) == ["0", "1", "2", "3"], "RANK 0..3 once each")
check(len(alloc) == 2 and [a["first_rank"] for a in alloc] == [0, 2], f"allocation {alloc}")
ports = {e["MASTER_PORT"] for e in envs}
check(len(ports) == 1 and ports.pop().isdigit(), "one numeric MASTER_PORT")
for r, e in enumerate(envs):
    node = alloc[r // 2]
    want = {"RANK": str(r), "LOCAL_RANK": str(r % 2), "NODE_RANK": str(r // 2),
            "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": master,
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "GSCHED_JOB_ID": job,
            "GSCHED_NODELIST": ",".join(a["node_name"] for a in alloc),
            "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in node["gpus"])}
    for k, v in want.items():
        check(e.get(k) == v, f"rank {r}: {k}={e.get(k)!r}, want {v!r}")
    check(len(e["CUDA_VISIBLE_DEVICES"].split(",")) == 2, f"rank {r}: 2 GPUs")
check(alloc[0]["node_name"] != alloc[1]["node_name"], "two different nodes")
PY
out=$("$bin/gsched" logs "$j" --task 3) || fail "logs --task 3 failed"
[ "$out" = "$(cat "gsched-$j-3.out")" ] && grep -qx RANK=3 <<< "$out" ||
  fail "logs --task 3 is not rank 3's output: $out"
"$bin/gsched" logs "$j" --task 4 2>err.txt && fail "logs of a task that does not exist succeeded"
grep -q "has no task 4" err.txt || fail "logs --task 4: $(cat err.txt)"

# --- open modes: sbatch empties its output file (Slurm's truncate) unless --open-mode=append;
# a job file's run.open_mode = "truncate" empties each task's own file, never a shared one --
echo stale > sb.out
a=$(sbatch_id -o sb.out --wrap="echo one")
wait_end "$a" || fail "sbatch job failed"
[ "$(cat sb.out)" = one ] || fail "sbatch's output was not emptied first: $(cat sb.out)"
a=$(sbatch_id -o sb.out --open-mode=append --wrap="echo two")
wait_end "$a" || fail "sbatch --open-mode=append job failed"
[ "$(cat sb.out)" = "$(printf 'one\ntwo')" ] || fail "--open-mode=append: $(cat sb.out)"
for f in own-0.out own-1.out shared.out; do echo stale > "$f"; done
for pattern in own-%t.out shared.out; do
  job_file open.toml "[resources]
nodes = 2
[run]
open_mode = \"truncate\"
stdout = \"$pattern\"
command = [\"sh\", \"-c\", \"echo rank \$RANK\"]"
  a=$(submit open.toml)
  wait_end "$a" || fail "open_mode job ($pattern) failed"
done
[ "$(cat own-0.out)" = "rank 0" ] && [ "$(cat own-1.out)" = "rank 1" ] ||
  fail "each task's own file was not emptied first: $(cat own-0.out own-1.out)"
[ "$(head -1 shared.out)" = stale ] && [ "$(sort shared.out | tr '\n' ' ')" = "rank 0 rank 1 stale " ] ||
  fail "a file both tasks write was emptied or lost a line: $(cat shared.out)"

# One task per GPU: LOCAL_RANK 0..2, each sees the job's 3 GPUs.
cat > pergpu.toml <<EOF
[resources]
gpus_per_node = 3
[run]
tasks_per_node = "per-gpu"
script = """
echo "\$LOCAL_RANK \$CUDA_VISIBLE_DEVICES"
$(gate_wait pergpu)
"""
EOF
j=$(submit pergpu.toml)
wait_start "$j"
gpus=$(jq "$j" 'sorted(j["allocation"][0]["gpus"])')
gate pergpu
wait_end "$j" || fail "per-gpu job failed"
python3 - "$j" "$gpus" <<'PY' || fail "per-gpu tasks wrong"
import json, sys
job, gpus = sys.argv[1], json.loads(sys.argv[2])
lines = [open(f"gsched-{job}-{r}.out").read().split() for r in range(3)]
assert [l[0] for l in lines] == ["0", "1", "2"], lines
assert len(gpus) == 3 and all(sorted(map(int, l[1].split(","))) == gpus for l in lines), (gpus, lines)
PY

# --- submit --wait exits with the job's status ---------------------------------------------
job_file ok.toml '[run]
command = ["true"]'
job_file exit3.toml '[run]
script = "exit 3"'
"$bin/gsched" submit ok.toml --wait >/dev/null 2>&1 || fail "submit --wait of a COMPLETED job: $?"
"$bin/gsched" submit exit3.toml --wait >out.txt 2>&1
rc=$?
[ $rc = 3 ] || fail "submit --wait of a job exiting 3 returned $rc: $(cat out.txt)"
failed=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' out.txt)
expect "$failed" 'j["state"] == "FAILED" and j["exit_code"] == 3'

# --- gang allocation -----------------------------------------------------------------------
cat > busy.toml <<EOF
[resources]
gpus_per_node = 1
[run]
script = """
$(gate_wait busy)
"""
EOF
job_file gang.toml '[resources]
nodes = 2
gpus_per_node = 4
[run]
script = "true"'
busy=$(submit busy.toml)
wait_start "$busy"
gang=$(submit gang.toml)
expect "$gang" 'j["state"] == "PENDING" and j["reason"] == "Resources"'
free=$("$bin/gsched" nodes --json | python3 -c '
import json, sys
print(sorted(n["gpus_free"] for n in json.load(sys.stdin)))')
[ "$free" = "[3, 4]" ] || fail "free GPUs while the gang job waits: $free"
gate busy
wait_end "$busy" || fail "busy job failed"
wait_end "$gang" || fail "gang job failed: $(jq "$gang" 'j')"
expect "$gang" "j['start_time_ms'] >= $(jq "$busy" 'j["end_time_ms"]') and len(j['allocation']) == 2" \
  "the gang job to start after the busy one ended, on 2 nodes"

# Requests no node can ever hold are refused at submit, and nothing is queued.
count=$(queue_count)
job_file nodes3.toml '[resources]
nodes = 3
[run]
script = "true"'
job_file gpus9.toml '[resources]
gpus_per_node = 9
[run]
script = "true"'
job_file h100.toml '[resources]
constraint = "h100"
[run]
script = "true"'
refused() { # refused FILE PATTERN: submit exits 1 with a line matching PATTERN
  "$bin/gsched" submit "$1" >out.txt 2>&1
  local rc=$?
  [ $rc = 1 ] || fail "submit $1 returned $rc: $(cat out.txt)"
  grep -q "$2" out.txt || fail "submit $1: no '$2' in: $(cat out.txt)"
}
refused nodes3.toml "^nodes3.toml:2:9: resources.nodes: .*asks for 3"
refused gpus9.toml "^gpus9.toml:2:17: resources.gpus_per_node: .*9 GPUs"
refused h100.toml "^h100.toml:2:14: resources.constraint: .*'h100'"
[ "$(queue_count)" = "$count" ] || fail "a refused job was queued"

# --- backfill ------------------------------------------------------------------------------
# A holds 3 of 4 GPUs on both nodes until the gate; B (priority 100) wants all 8 and is
# reserved for A's time limit. C (1 GPU, 10 s limit) ends before that and starts at once;
# D (1 GPU, 5 min) would delay B, so it waits with reason Priority even after C is gone.
cat > a.toml <<EOF
name = "A"
[resources]
nodes = 2
gpus_per_node = 3
time_limit = "1m"
[run]
script = """
$(gate_wait backfill)
"""
EOF
job_file b.toml 'name = "B"
priority = 100
[resources]
nodes = 2
gpus_per_node = 4
time_limit = "1m"
[run]
script = "true"'
job_file c.toml 'name = "C"
[resources]
gpus_per_node = 1
time_limit = "10s"
[run]
script = "true"'
job_file d.toml 'name = "D"
[resources]
gpus_per_node = 1
time_limit = "5m"
[run]
script = "true"'
a=$(submit a.toml)
wait_start "$a"
b=$(submit b.toml)
expect "$b" "j['state'] == 'PENDING' and j['reason'] == 'Resources' and
  abs(j['expected_start_ms'] - $(jq "$a" 'j["start_time_ms"]') - 60000) <= 1500" \
  "B pending for Resources, expected to start when A's time limit ends"
d=$(submit d.toml)
c=$(submit c.toml)
wait_end "$c" || fail "C failed"
expect "$c" 'any(e["state"] == "RUNNING" and "backfilled" in e["reason"] for e in h)' \
  "C's history to say backfilled"
expect "$d" 'j["state"] == "PENDING" and j["reason"] == "Priority"'
expect "$b" 'j["state"] == "PENDING"'
"$bin/gsched" cancel "$a" || fail "cancel A"
wait_end "$b" || fail "B failed"
wait_end "$d" || fail "D failed"
expect "$d" "j['start_time_ms'] >= $(jq "$b" 'j["start_time_ms"]')" "D to start after B"
expect "$a" 'j["state"] == "CANCELLED"'

# --- scheduler.backfill_depth = 2: the second blocked job holds a reservation too ---------
# A again; B and then E (priority 50, all 8 GPUs too) blocked: B expected when A's limit
# ends, E when B's does after that.
sed -i 's/^\[scheduler\]$/[scheduler]\nbackfill_depth = 2/' "$state/gsched.toml"
grep -q '^backfill_depth = 2$' "$state/gsched.toml" || fail "no [scheduler] table to edit"
restart_sched 2
wait_for "both nodes up again" 20 eval '[ "$("$bin/gsched" nodes --json |
  python3 -c "import json,sys; print(sum(n[\"state\"] == \"up\" for n in json.load(sys.stdin)))")" = 2 ]'
sed 's/^priority = 100$/priority = 50/; s/^name = "B"$/name = "E"/' "$work/b.toml" > "$work/e.toml"
a=$(submit a.toml)
wait_start "$a"
b=$(submit b.toml)
e=$(submit e.toml)
started=$(jq "$a" 'j["start_time_ms"]')
wait_for "E's expected start" 15 is "$e" "j['state'] == 'PENDING' and
  abs(j['expected_start_ms'] - $started - 120000) <= 1500"
expect "$b" "abs(j['expected_start_ms'] - $started - 60000) <= 1500" "B expected when A's limit ends"
expect "$e" 'j["sched_nodes"] == "node[1-2]"' "E's reservation to hold both nodes"
out=$("$bin/gsched" scontrol show job "$e") || fail "scontrol show job $e"
case $out in *"NodeList=(null) SchedNodeList=node[1-2]"*) ;; *) fail "SchedNodeList: $out" ;; esac
out=$("$bin/gsched" squeue --start -h -o '%i %Y') || fail "squeue --start"
[ "$out" = "$(printf '%s node[1-2]\n%s node[1-2]' "$b" "$e")" ] || fail "squeue --start: $out"
# sbatch --test-only: a job of B's shape, behind B and E, would start when E's limit ends.
out=$("$bin/gsched" sbatch --test-only -N2 --gpus-per-node=4 -t 1 --wrap=true 2>&1 > /dev/null) ||
  fail "sbatch --test-only: $out"
case $out in *"sbatch: Job would start at "*" using "*" processors on nodes node[1-2]"*) ;;
  *) fail "sbatch --test-only's estimate: $out" ;; esac
at=$(date -d "$(printf '%s\n' "$out" | sed -n 's/^sbatch: Job would start at \([^ ]*\) .*/\1/p')" +%s)
[ $((at - started / 1000 - 180)) -ge -2 ] && [ $((at - started / 1000 - 180)) -le 2 ] ||
  fail "sbatch --test-only: expected at $at, E's limit ends at $((started / 1000 + 180))"
[ "$("$bin/gsched" squeue -h -o %i | wc -l)" = 3 ] || fail "sbatch --test-only submitted a job"
"$bin/gsched" cancel "$a" "$b" "$e" > /dev/null || fail "cancel A, B, E"
gate backfill
for j in "$a" "$b" "$e"; do wait_end "$j" || true; done

# --- time limits ---------------------------------------------------------------------------
job_file limit.toml '[resources]
time_limit = "2s"
[run]
command = ["sleep", "60"]'
cat > stubborn.toml <<EOF
[resources]
time_limit = "2s"
[run]
script = """
trap '' TERM
echo \$\$ > $tmp/stubborn.pid
$(gate_wait never)
"""
EOF
t1=$(submit limit.toml)
t2=$(submit stubborn.toml)
wait_end "$t1" 15
wait_end "$t2" 15
expect "$t1" 'j["state"] == "TIMEOUT" and t[0]["term_signal"] == 15 and
  j["end_time_ms"] - j["start_time_ms"] < 10000' "TIMEOUT by SIGTERM"
expect "$t2" 'j["state"] == "TIMEOUT" and t[0]["term_signal"] == 9 and
  j["end_time_ms"] - j["start_time_ms"] >= 2500' "TIMEOUT by SIGKILL after the 1 s grace"
pid=$(cat "$tmp/stubborn.pid")
wait_for "the stubborn task (pid $pid) to be gone" 5 eval "! pid_alive $pid"

# --- cancel --------------------------------------------------------------------------------
cat > victim.toml <<EOF
[run]
env = { SECRET = "hunter2" }
script = """
echo \$\$ > $tmp/victim.pid
$(gate_wait never)
"""
EOF
v=$(submit victim.toml)
wait_start "$v"
wait_for "the victim's pid file" 10 test -s "$tmp/victim.pid"
pid=$(cat "$tmp/victim.pid")
pid_alive "$pid" || fail "the victim task is not running"
# Someone else may not cancel it (the socket is 0666; let others through the directories).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp" "$state"
  setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    "$bin/gsched" cancel "$v" >out.txt 2>&1 && fail "nobody cancelled root's job"
  grep -q "permission denied" out.txt || fail "cancel by nobody: $(cat out.txt)"
  expect "$v" 'j["state"] == "RUNNING"'
  # ... nor read its environment, script or arguments (Slurm's PrivateData).
  setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    "$bin/gsched" show "$v" --json >shown.json 2>&1 || fail "show by nobody: $(cat shown.json)"
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["job"]["spec"]["run"]
assert r["env"] == {} and r["argv"] == [] and r["script"] == "", r' shown.json ||
    fail "nobody sees root's job spec: $(cat shown.json)"
  "$bin/gsched" show "$v" --json | grep -q hunter2 || fail "the owner no longer sees the job's env"
  chmod 700 "$tmp" "$state"
fi
"$bin/gsched" cancel "$v" || fail "cancel of a running job failed"
wait_end "$v" 10
expect "$v" 'j["state"] == "CANCELLED" and t[0]["end_reason"] == "CANCELLED"'
wait_for "the cancelled task (pid $pid) to be gone" 5 eval "! pid_alive $pid"
"$bin/gsched" cancel "$v" 2>err.txt && fail "a second cancel succeeded"
grep -q "already ended" err.txt || fail "second cancel: $(cat err.txt)"
p=$(submit ok.toml --hold)
"$bin/gsched" cancel "$p" || fail "cancel of a pending job failed"
expect "$p" 'j["state"] == "CANCELLED" and j["start_time_ms"] == 0' "CANCELLED at once, never run"
# Cancelled the moment it is submitted: each ends CANCELLED, its task killed, wherever the
# cancel lands (pending, while its start is being stored and before the launch has reached
# the worker, which gschedd then signals again after the launch, or later). Which of them
# a run hits is up to timing; the outcome must be the same.
printf '[run]\ncommand = ["sleep", "300.%s"]\n' $$ > long.toml
quick=()
for _ in 1 2 3 4 5 6 7 8; do
  q=$(submit long.toml)
  "$bin/gsched" cancel "$q" > /dev/null || fail "cancel right after submit failed"
  quick+=("$q")
done
for q in "${quick[@]}"; do
  wait_end "$q" 20
  expect "$q" 'j["state"] == "CANCELLED"' "job $q CANCELLED"
done
pgrep -fx "sleep 300.$$" > /dev/null && fail "a task of a job cancelled at submit still runs"

# --- dependencies --------------------------------------------------------------------------
cat > parent.toml <<EOF
[run]
script = """
$(gate_wait parent)
"""
EOF
dep_file() { # dep_file FILE DEPENDENCY
  job_file "$1" "depends_on = [\"$2\"]
[run]
script = \"true\""
}
parent=$(submit parent.toml)
wait_start "$parent"
dep_file ok-after.toml "afterok:$parent"
dep_file notok-after.toml "afternotok:$parent"
dep_file ok-failed.toml "afterok:$failed"
dep_file notok-failed.toml "afternotok:$failed"
dep_file any-failed.toml "afterany:$failed"
dep_file nosuch.toml "afterok:99999"
c1=$(submit ok-after.toml)
c2=$(submit notok-after.toml)
expect "$c1" 'j["state"] == "PENDING" and j["reason"] == "Dependency"'
expect "$c2" 'j["state"] == "PENDING" and j["reason"] == "Dependency"'
gate parent
wait_end "$parent" || fail "parent failed"
wait_end "$c1" || fail "afterok on a COMPLETED job did not complete: $(jq "$c1" 'j')"
wait_for "afternotok on a COMPLETED job to be never satisfied" 10 \
  is "$c2" 'j["state"] == "PENDING" and j["reason"] == "DependencyNeverSatisfied"'
c3=$(submit ok-failed.toml)
expect "$c3" 'j["state"] == "PENDING" and j["reason"] == "DependencyNeverSatisfied"'
c4=$(submit notok-failed.toml)
wait_end "$c4" || fail "afternotok on a FAILED job did not complete: $(jq "$c4" 'j')"
c5=$(submit any-failed.toml)
wait_end "$c5" || fail "afterany on a FAILED job did not complete"
count=$(queue_count)
refused nosuch.toml "^nosuch.toml:1:14: depends_on: job 99999 does not exist"
[ "$(queue_count)" = "$count" ] || fail "a job depending on no job was queued"
"$bin/gsched" cancel "$c2" "$c3" || fail "cancel of jobs never to run failed"

# --- hold and release ----------------------------------------------------------------------
job_file held.toml 'hold = true
[run]
script = "true"'
h1=$(submit ok.toml --hold)
h2=$(submit held.toml)
expect "$h1" 'j["state"] == "PENDING" and j["reason"] == "Held" and j["held"]'
expect "$h2" 'j["state"] == "PENDING" and j["reason"] == "Held"'
"$bin/gsched" release "$h1" "$h2" || fail "release failed"
wait_end "$h1" || fail "released job 1 failed"
wait_end "$h2" || fail "released job 2 failed"
# Hold a job that waits for resources: once they are free it still does not start.
sed "s|/busy |/busy2 |" busy.toml > busy2.toml
busy=$(submit busy2.toml)
wait_start "$busy"
x=$(submit gang.toml)
expect "$x" 'j["state"] == "PENDING" and j["reason"] == "Resources"'
"$bin/gsched" hold "$x" || fail "hold of a pending job failed"
expect "$x" 'j["state"] == "PENDING" and j["held"] and j["reason"] == "Held"'
"$bin/gsched" hold "$x" 2>/dev/null && fail "holding a held job succeeded"
gate busy2
wait_end "$busy" || fail "busy job failed"
y=$(submit ok.toml) # a later scheduling pass, with every GPU free
wait_end "$y" || fail "job $y failed"
expect "$x" 'j["state"] == "PENDING" and j["reason"] == "Held" and j["start_time_ms"] == 0' \
  "the held job not to start"
"$bin/gsched" release "$x" || fail "release of the held job failed"
wait_end "$x" || fail "released gang job failed"

# --- bad job files: every problem with its place, nothing queued ---------------------------
count=$(queue_count)
job_file typo.toml 'priority = "high"
[resources]
gpu_per_node = 1
[run]
script = "true"'
"$bin/gsched" submit typo.toml >out.txt 2>&1
rc=$?
[ $rc = 1 ] || fail "submit of a bad file returned $rc"
grep -qxF "typo.toml:3:1: unknown key 'gpu_per_node' in resources (did you mean 'resources.gpus_per_node'?)" \
  out.txt || fail "no typo suggestion in: $(cat out.txt)"
grep -q "^typo.toml:1:12: priority must be an integer" out.txt || fail "type error: $(cat out.txt)"
[ "$(queue_count)" = "$count" ] || fail "a bad job file was queued"

stop_cluster
check_logs
echo "jobs: ok"
