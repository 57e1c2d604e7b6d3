#!/usr/bin/env bash
# resv.sh BIN_DIR SRC_DIR: advance reservations (issue 18) on a `gsched up` cluster of two
# workers. Refused creates change nothing (no nodes, an unknown node, a typo'd key, a
# non-root caller); a job naming an unknown reservation is refused at submit. A reservation
# of node2 starting in a few seconds: a job in it waits (reason Reservation) and then runs
# on node2, its unlimited time limit lowered to the reservation's end; a job without it
# that would run into the reservation keeps off node2 even while node2 is idle. The
# reservation outlives a gschedd restart; once deleted, the waiting job runs on node2. An
# HOURLY reservation moves on to its next window when it ends, and a reservation in one of
# its later windows is refused while one between them is not; Users+=, Users=-NAME and
# Flags+= edit the stored reservation, and edits that cannot hold change nothing. A
# reservation over a job running without a time limit is refused ("busy") unless
# Flags=IGNORE_JOBS; with MAINT its node shows "maint" in sinfo, scontrol and gsched nodes.
# Two reservations of one node are refused unless one says OVERLAP; then both's jobs run there.
# PURGE_COMP=TIME: a reservation stays while a job in it runs past that time, and is deleted
# that long after its last job ended; one never used goes that long after its start.
# FLEX: a job in a reservation of node2 that starts in an hour runs now, on both nodes, its
# time limit not cut to the reservation's end; a job in none still keeps off node2.
# MAGNETIC: a job naming no reservation runs on the reservation's node2 while it lets its
# user in, and on node1 (first by rank) once it is gone. REPLACE_DOWN: draining node2 moves
# such a reservation to the idle node1 within seconds; one without the flag stays. REPLACE:
# a reservation's node its running job holds moves it to the idle one as the job starts,
# where its next job runs while the first goes on.
name="integration_resv"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 2 --gpus-per-node 0 --share-cpus

node_up() { "$bin/gsched" nodes --json "$1" | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)[0]["state"] != "up")'; }
wait_for "both nodes up" 15 eval 'node_up node1 && node_up node2'
scontrol() { "$bin/gsched" scontrol "$@"; }

# --- refused, changing nothing -------------------------------------------------------------
out=$(scontrol create reservation ReservationName=r StartTime=now Duration=10 Users=root 2>&1) &&
  fail "a reservation without nodes: $out"
out=$(scontrol create reservation ReservationName=r StartTime=now Duration=10 Nodes=node9 Users=root 2>&1) &&
  fail "a reservation of node9: $out"
case $out in *"no node node9"*) ;; *) fail "node9: $out" ;; esac
out=$(scontrol create reservation ReservationName=r StartTime=now Duration=10 Nodes=node2 Users=root Flagz=MAINT 2>&1) &&
  fail "Flagz=: $out"
case $out in *Flagz*) ;; *) fail "Flagz: $out" ;; esac
out=$(scontrol create reservation ReservationName=r StartTime=now Duration=10 Nodes=node2 Users=nosuchuser 2>&1) &&
  fail "a reservation for nosuchuser: $out"
case $out in *"no user nosuchuser"*) ;; *) fail "nosuchuser: $out" ;; esac
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp" "$state"
  out=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    "$bin/gsched" scontrol create reservation ReservationName=r StartTime=now Duration=10 \
    Nodes=node2 Users=nobody 2>&1) && fail "nobody created a reservation"
  case $out in *"only root"*) ;; *) fail "create by nobody: $out" ;; esac
fi
out=$(scontrol show reservation 2>&1)
case $out in *"No reservations in the system"*) ;; *) fail "refusals left a reservation: $out" ;; esac
out=$("$bin/gsched" sbatch --reservation=team --wrap=true 2>&1) && fail "a job in no reservation: $out"
case $out in *"no reservation team"*) ;; *) fail "--reservation=team: $out" ;; esac

# --- a reservation of node2 that starts in 3 s, for 10 minutes --------------------------------
out=$(scontrol create reservation ReservationName=team StartTime=now+3 Duration=10 Nodes=node2 \
  Users=root 2>&1) || fail "create refused: $out"
case $out in *"Reservation created: team"*) ;; *) fail "create said: $out" ;; esac
out=$(scontrol create reservation ReservationName=other StartTime=now+60 Duration=10 Nodes=node2 \
  Users=root 2>&1) && fail "an overlapping reservation: $out"
case $out in *"in reservation team"*) ;; *) fail "overlap: $out" ;; esac
in=$(sbatch_id --reservation=team --wrap=true) || exit 1
# Unlimited, node2 only: it would run into the reservation, so it waits though node2 is idle.
out2=$(sbatch_id -w node2 --wrap=true) || exit 1
expect "$in" 'j["state"] == "PENDING" and j["reason"] == "Reservation"' "to wait for the start"
expect "$out2" 'j["state"] == "PENDING" and j["reason"] == "Resources"' "to keep off node2"
wait_end "$in" || fail "the job in the reservation failed"
expect "$in" 'j["allocation"][0]["node_name"] == "node2"' "to run on node2"
expect "$in" '0 < j["resources"]["time_limit_s"] <= 600' "its time limit to end it with the reservation"
expect "$out2" 'j["state"] == "PENDING"' "the other job to keep off node2 while it is active"
show=$(scontrol show reservation team)
case $show in *"ReservationName=team"*"Nodes=node2"*"Users=root"*"State=ACTIVE"*) ;;
  *) fail "show reservation: $show" ;; esac
"$bin/gsched" sinfo -T | grep -q "team.*ACTIVE.*node2" || fail "sinfo -T: $("$bin/gsched" sinfo -T)"

# --- it outlives a restart -------------------------------------------------------------------
restart_sched 2
wait_for "both nodes back" 15 eval 'node_up node1 && node_up node2'
case $(scontrol show reservation team) in *"Nodes=node2"*) ;;
  *) fail "after a restart: $(scontrol show reservation 2>&1)" ;; esac
expect "$out2" 'j["state"] == "PENDING"' "the other job to wait after the restart"

# --- an update moves it to node1; the waiting job gets node2 -----------------------------------
scontrol update ReservationName=team Nodes=node1 || fail "update refused"
wait_end "$out2" || fail "the node2 job failed once the reservation moved"
expect "$out2" 'j["allocation"][0]["node_name"] == "node2"' "to run on node2"
scontrol delete ReservationName=team || fail "delete refused"
case $(scontrol show reservation 2>&1) in *"No reservations in the system"*) ;;
  *) fail "deleted, yet: $(scontrol show reservation 2>&1)" ;; esac
grep -q 'reservation=team uid=0 reservation deleted' "$state/gschedd.log" || fail "no log line for the delete"

# --- a repeating reservation moves to its next window instead of ending ----------------------
start_of() { # start_of NAME: its StartTime as seconds since the epoch
  scontrol show reservation "$1" | python3 -c 'import re, sys, time
m = re.search(r"StartTime=(\S+)", sys.stdin.read())
print(int(time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))))'
}
out=$(scontrol create reservation ReservationName=rep StartTime=now Duration=0:03 Nodes=node1 \
  Users=root Flags=HOURLY 2>&1) || fail "a repeating reservation refused: $out"
first=$(start_of rep)
case $(scontrol show reservation rep) in *"Flags=HOURLY"*) ;; *) fail "no Flags: $(scontrol show reservation rep)" ;; esac
wait_for "the hourly reservation to repeat" 15 grep -q 'reservation=rep flags=HOURLY .*reservation repeats' "$state/gschedd.log"
[ $(( $(start_of rep) - first )) = 3600 ] || fail "repeated at $(start_of rep), not an hour after $first"
case $(scontrol show reservation rep) in *"State=INACTIVE"*) ;; *) fail "not between windows: $(scontrol show reservation rep)" ;; esac
out=$(scontrol create reservation ReservationName=clash StartTime=now+119minutes Duration=10 Nodes=node1 \
  Users=root 2>&1) && fail "a reservation in one of rep's later windows: $out"
case $out in *"in reservation rep"*) ;; *) fail "clash: $out" ;; esac
out=$(scontrol create reservation ReservationName=between StartTime=now+90minutes Duration=10 \
  Nodes=node1 Users=root 2>&1) || fail "a reservation between rep's windows refused: $out"
out=$(scontrol update ReservationName=rep Duration=2:00:00 2>&1) && fail "an hourly window of two hours: $out"
case $out in *"Flags=HOURLY: each window lasts at most an hour"*) ;; *) fail "two hours: $out" ;; esac
scontrol delete ReservationName=rep && scontrol delete ReservationName=between || fail "deletes refused"

# --- Users+= / Users-= / Flags+= edit what gschedd holds -------------------------------------
if id nobody >/dev/null 2>&1; then
  scontrol create reservation ReservationName=edits StartTime=now+1day Duration=10 Nodes=node2 \
    Users=root >/dev/null || fail "create edits refused"
  scontrol update ReservationName=edits Users+=nobody Flags+=DAILY >/dev/null || fail "Users+= refused"
  case $(scontrol show reservation edits) in *"Flags=DAILY Users=root,nobody "*) ;;
    *) fail "after Users+=: $(scontrol show reservation edits)" ;; esac
  scontrol update ReservationName=edits Users=-root >/dev/null || fail "Users=-root refused"
  case $(scontrol show reservation edits) in *"Users=nobody "*) ;; *) fail "after Users=-root: $(scontrol show reservation edits)" ;; esac
  out=$(scontrol update ReservationName=edits Users-=root 2>&1) && fail "removing root twice: $out"
  case $out in *"Users-=root: not one of the reservation's Users"*) ;; *) fail "root twice: $out" ;; esac
  out=$(scontrol update ReservationName=edits Flags+=WEEKLY 2>&1) && fail "two recurrences: $out"
  case $out in *"repeats one way"*) ;; *) fail "DAILY and WEEKLY: $out" ;; esac
  case $(scontrol show reservation edits) in *"Flags=DAILY Users=nobody "*) ;;
    *) fail "refused edits changed it: $(scontrol show reservation edits)" ;; esac
  scontrol delete ReservationName=edits || fail "delete edits refused"
fi

# --- a maintenance reservation: refused over a running job unless IGNORE_JOBS ----------------
long=$(sbatch_id -w node1 --wrap="sleep 300") || exit 1
wait_for "the long job to run" 15 is "$long" 'j["state"] == "RUNNING"'
out=$(scontrol create reservation ReservationName=maint StartTime=now Duration=10 Nodes=node1 \
  Users=root Flags=MAINT 2>&1) && fail "a reservation over a running job: $out"
case $out in *"node node1 is busy: job $long runs there without a time limit"*) ;; *) fail "busy: $out" ;; esac
out=$(scontrol create reservation ReservationName=maint StartTime=now Duration=10 Nodes=node1 \
  Users=root Flags=maint,ignore_jobs 2>&1) || fail "Flags=MAINT,IGNORE_JOBS refused: $out"
case $(scontrol show reservation maint) in *"Flags=MAINT,IGNORE_JOBS "*) ;;
  *) fail "maint flags: $(scontrol show reservation maint)" ;; esac
[ "$("$bin/gsched" sinfo -N -h -n node1 -o '%N %t')" = "node1 maint" ] ||
  fail "sinfo during maintenance: $("$bin/gsched" sinfo -N -n node1 -o '%N %t' 2>&1)"
[ "$("$bin/gsched" sinfo -N -h -n node2 -o '%N %t')" != "node2 maint" ] || fail "node2 in maintenance"
case $(scontrol show node node1) in *"State=MIXED+MAINT"* | *"State=ALLOCATED+MAINT"*) ;;
  *) fail "scontrol show node: $(scontrol show node node1)" ;; esac
"$bin/gsched" nodes | grep -q "^node1 *maint " || fail "gsched nodes: $("$bin/gsched" nodes)"
expect "$long" 'j["state"] == "RUNNING"' "the job already on node1 to go on"
"$bin/gsched" cancel "$long" > /dev/null || fail "cancel $long"
scontrol delete ReservationName=maint || fail "delete maint refused"
[ "$("$bin/gsched" sinfo -N -h -n node1 -o '%N %t')" != "node1 maint" ] || fail "node1 still in maintenance"

# --- OVERLAP: two reservations share node2, and each one's jobs run there -------------------
scontrol create reservation ReservationName=a StartTime=now Duration=10 Nodes=node2 Users=root \
  > /dev/null || fail "reservation a refused"
out=$(scontrol create reservation ReservationName=b StartTime=now Duration=10 Nodes=node2 \
  Users=root 2>&1) && fail "a second reservation of node2 without OVERLAP: $out"
case $out in *"node node2 is in reservation a"*) ;; *) fail "without OVERLAP: $out" ;; esac
scontrol create reservation ReservationName=b StartTime=now Duration=10 Nodes=node2 Users=root \
  Flags=OVERLAP > /dev/null || fail "an OVERLAP reservation of node2 refused"
scontrol update ReservationName=a Duration=20 > /dev/null || fail "a's update refused beside b"
for r in a b; do
  job=$(sbatch_id --reservation=$r --wrap=true) || exit 1
  wait_end "$job" || fail "the job in $r failed"
  expect "$job" 'j["allocation"][0]["node_name"] == "node2"' "the job in $r on node2"
done
scontrol delete ReservationName=a && scontrol delete ReservationName=b || fail "deletes refused"

# --- PURGE_COMP: deleted once idle -----------------------------------------------------------
scontrol create reservation ReservationName=pc StartTime=now Duration=60 Nodes=node2 \
  Users=root Flags=PURGE_COMP=0:05 > /dev/null || fail "Flags=PURGE_COMP=0:05 refused"
case $(scontrol show reservation pc) in *" Flags=PURGE_COMP=00:00:05 "*) ;;
  *) fail "purge flag: $(scontrol show reservation pc)" ;; esac
job=$(sbatch_id --reservation=pc --wrap="sleep 8") || exit 1
wait_end "$job" 30 || fail "the job in pc failed"
expect "$job" 'j["end_time_ms"] - j["start_time_ms"] >= 7000' "a run past the purge time"
scontrol show reservation pc > /dev/null 2>&1 || fail "pc purged while its job ran"
wait_for "pc purged 5 s after its job" 30 eval '! scontrol show reservation pc > /dev/null 2>&1'
grep -q "reservation=pc purge_s=5 reservation idle (PURGE_COMP), deleted" "$state/gschedd.log" ||
  fail "no purge line in gschedd.log"
scontrol create reservation ReservationName=unused StartTime=now Duration=60 Nodes=node2 \
  Users=root Flags=PURGE_COMP=0:01 > /dev/null || fail "unused refused"
wait_for "unused purged a second after its start" 30 \
  eval '! scontrol show reservation unused > /dev/null 2>&1'

# --- FLEX: its jobs start before it, outside it too ---------------------------------------------
scontrol create reservation ReservationName=flex StartTime=now+1hour Duration=60 Nodes=node2 \
  Users=root Flags=FLEX > /dev/null || fail "Flags=FLEX refused"
case $(scontrol show reservation flex) in *" Flags=FLEX "*) ;;
  *) fail "flex flag: $(scontrol show reservation flex)" ;; esac
job=$(sbatch_id --reservation=flex -N 2 -t 120 --wrap=true) || exit 1
wait_end "$job" 30 || fail "the 2-node job in the 1-node FLEX reservation failed"
expect "$job" 'sorted(a["node_name"] for a in j["allocation"]) == ["node1", "node2"]' \
  "on node1 and node2, an hour before the reservation"
expect "$job" 'j["resources"]["time_limit_s"] == 7200' "its own 2 h limit, not cut to the reservation"
other=$(sbatch_id -t 120 -w node2 --wrap=true) || exit 1
wait_for "a job in no reservation to keep off node2" 15 \
  is "$other" 'j["state"] == "PENDING" and j["reason"] != ""'
"$bin/gsched" cancel "$other" > /dev/null || fail "cancel $other"
scontrol delete ReservationName=flex || fail "delete flex refused"

# --- MAGNETIC: a job naming no reservation goes into one that lets it in ------------------------
scontrol create reservation ReservationName=mag StartTime=now Duration=60 Nodes=node2 \
  Users=root Flags=MAGNETIC > /dev/null || fail "Flags=MAGNETIC refused"
case $(scontrol show reservation mag) in *" Flags=MAGNETIC "*) ;;
  *) fail "magnetic flag: $(scontrol show reservation mag)" ;; esac
job=$(sbatch_id -t 120 --wrap=true) || exit 1
wait_end "$job" 30 || fail "the job drawn into mag failed"
expect "$job" 'j["allocation"][0]["node_name"] == "node2"' "on mag's node2, though node1 ranks first"
scontrol delete ReservationName=mag || fail "delete mag refused"
job=$(sbatch_id -t 120 --wrap=true) || exit 1
wait_end "$job" 30 || fail "the job after mag failed"
expect "$job" 'j["allocation"][0]["node_name"] == "node1"' "on node1 once mag is gone"

# --- REPLACE_DOWN: a drained node of the reservation is swapped for an idle one ---------------
scontrol create reservation ReservationName=rd StartTime=now+1hour Duration=60 Nodes=node2 \
  Users=root Flags=REPLACE_DOWN > /dev/null || fail "Flags=REPLACE_DOWN refused"
scontrol create reservation ReservationName=stay StartTime=now+3hours Duration=60 Nodes=node2 \
  Users=root > /dev/null || fail "stay refused"
scontrol update NodeName=node2 State=DRAIN Reason=resv-test || fail "drain node2"
wait_for "rd to move to node1" 15 eval 'scontrol show reservation rd | grep -q " Nodes=node1 "'
case $(scontrol show reservation rd) in *" Flags=REPLACE_DOWN "*) ;;
  *) fail "rd's flags: $(scontrol show reservation rd)" ;; esac
case $(scontrol show reservation stay) in *" Nodes=node2 "*) ;;
  *) fail "stay moved without the flag: $(scontrol show reservation stay)" ;; esac
grep -q "reservation=rd node=node2 replaced_by=node1 .*(REPLACE_DOWN)" "$state/gschedd.log" ||
  fail "no replacement line in gschedd.log"
scontrol update NodeName=node2 State=RESUME || fail "resume node2"
scontrol delete ReservationName=rd && scontrol delete ReservationName=stay || fail "delete rd, stay"

# --- REPLACE: a node its job holds is swapped for an idle one, a pool for the next job --------
scontrol create reservation ReservationName=pool StartTime=now Duration=60 Nodes=node2 \
  Users=root Flags=REPLACE > /dev/null || fail "Flags=REPLACE refused"
first=$(sbatch_id --reservation=pool -t 10 --wrap="sleep 300") || exit 1
wait_for "the first job in pool to run" 15 is "$first" 'j["state"] == "RUNNING"'
expect "$first" 'j["allocation"][0]["node_name"] == "node2"' "the first job on pool's node2"
# moved in the pass that started the job, not at a later tick: there by the time it runs
case $(scontrol show reservation pool) in *" Nodes=node1 "*) ;;
  *) fail "pool not moved when its job started: $(scontrol show reservation pool)" ;; esac
grep -q "reservation=pool node=node2 replaced_by=node1 .*held by a job, replaced (REPLACE)" \
  "$state/gschedd.log" || fail "no REPLACE line in gschedd.log"
second=$(sbatch_id --reservation=pool -t 10 --wrap="sleep 300") || exit 1
wait_for "the second job in pool to run" 15 is "$second" 'j["state"] == "RUNNING"'
expect "$second" 'j["allocation"][0]["node_name"] == "node1"' "the second job on pool's new node1"
expect "$first" 'j["state"] == "RUNNING"' "the first job to run on outside pool"
case $(scontrol show reservation pool) in *" Nodes=node1 "*" Flags=REPLACE "*) ;;
  *) fail "pool with no idle node left: $(scontrol show reservation pool)" ;; esac
"$bin/gsched" cancel "$first" "$second" > /dev/null || fail "cancel the pool's jobs"
# A cancel is acknowledged once the tasks are signalled; the reservation stays busy (and its
# deletion refused, as Slurm's is) until they have ended.
wait_end "$first"
wait_end "$second"
scontrol delete ReservationName=pool || fail "delete pool"
check_logs
stop_cluster
echo "$name: passed"
