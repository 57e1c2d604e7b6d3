#!/usr/bin/env bash
# scontrol.sh BIN_DIR [FAKE_GSCHEDD]: `gsched scontrol show hostnames` expands hostlists as
# Slurm's does, from its argument or $SLURM_JOB_NODELIST, and refuses bad ones and unknown
# commands (exit 1, as Slurm's scontrol). With FAKE_GSCHEDD, the reservation commands
# (scontrol create/update/delete/show reservation, sinfo -T) against its two canned
# reservations (fake_gschedd.c): Slurm's exact lines, what is sent (its RECORD), refusals.
set -u
gsched=$1/gsched
fake=${2:-}
failures=0
fail() { echo "scontrol: $*" >&2; failures=$((failures + 1)); }

out=$("$gsched" scontrol show hostnames 'node[1-3,7],gpu[08-10]' 2>&1) || fail "failed: $out"
[ "$out" = "$(printf 'node1\nnode2\nnode3\nnode7\ngpu08\ngpu09\ngpu10')" ] || fail "got: $out"
out=$(SLURM_JOB_NODELIST='n[1-2]' "$gsched" scontrol show hostnames) || fail "env: failed"
[ "$out" = "$(printf 'n1\nn2')" ] || fail "from the environment: $out"
head=$(SLURM_JOB_NODELIST='a[5-9]' "$gsched" scontrol show hostnames | head -n 1)
[ "$head" = a5 ] || fail "first host: $head"
out=$("$gsched" scontrol show hostnames 'n[3-1]' 2>&1)
[ $? -eq 1 ] && [[ $out == *"goes down"* ]] || fail "bad hostlist: $out"
out=$(env -u SLURM_JOB_NODELIST -u GSCHED_NODELIST "$gsched" scontrol show hostnames 2>&1)
[ $? -eq 1 ] && [[ $out == *"SLURM_JOB_NODELIST is not set"* ]] || fail "no list: $out"
# Unknown commands fail as Slurm's do: exit 1, naming the word. (show job, partition,
# node and the job actions talk to gschedd: slurm-views.sh covers them.)
out=$("$gsched" scontrol frobnicate 2>&1)
[ $? -eq 1 ] && [[ $out == *"invalid keyword: frobnicate"* ]] || fail "unknown command: $out"
out=$("$gsched" scontrol show 2>&1)
[ $? -eq 1 ] && [[ $out == *"show what?"* ]] || fail "show without an entity: $out"
# Called through a link named scontrol, gsched is scontrol, as job scripts call it.
dir=$(mktemp -d)
ln -s "$gsched" "$dir/scontrol"
out=$("$dir/scontrol" show hostnames 'x[1-2]' 2>&1) || fail "as scontrol: $out"
[ "$out" = "$(printf 'x1\nx2')" ] || fail "as scontrol: $out"
rm -rf "$dir"

# --- reservations, against fake_gschedd --------------------------------------------------
if [ -n "$fake" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/gsched-resv.XXXXXX")
  export GSCHED_SOCKET=$dir/gschedd.sock TZ=UTC
  "$fake" "$GSCHED_SOCKET" "$dir/record" &
  fake_pid=$!
  trap 'kill "$fake_pid" 2>/dev/null; rm -rf "$dir"' EXIT
  for _ in $(seq 100); do [ -S "$GSCHED_SOCKET" ] && break; sleep 0.05; done
  [ -S "$GSCHED_SOCKET" ] || fail "fake_gschedd did not start"
  : > "$dir/record"
  last_record() { tail -n 1 "$dir/record"; }
  # expect STATUS CMD...: runs gsched CMD, stdout and stderr together into $out.
  expect() {
    local want=$1 rc
    shift
    out=$("$gsched" "$@" 2>&1)
    rc=$?
    [ "$rc" -eq "$want" ] || fail "gsched $*: exit $rc, want $want: $out"
  }

  expect 0 scontrol show reservation
  want='ReservationName=maint StartTime=2026-12-05T10:00:00 EndTime=2026-12-05T11:00:00 Duration=01:00:00
   Nodes=n[1-2] NodeCnt=2 Users=alice Accounts=(null) State=ACTIVE

ReservationName=future StartTime=2026-12-24T08:00:00 EndTime=Unknown Duration=UNLIMITED
   Nodes=n5 NodeCnt=1 Users=(null) Accounts=physics,bio State=INACTIVE'
  [ "$out" = "$want" ] || fail "show reservation: got
$out"
  expect 0 scontrol -o show res future
  [ "$out" = "ReservationName=future StartTime=2026-12-24T08:00:00 EndTime=Unknown Duration=UNLIMITED Nodes=n5 NodeCnt=1 Users=(null) Accounts=physics,bio State=INACTIVE" ] ||
    fail "show res -o: $out"
  expect 1 scontrol show reservations nope
  [ "$out" = "scontrol: error: Reservation nope not found" ] || fail "show missing: $out"

  expect 0 sinfo -T
  want='RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST
maint        ACTIVE  2026-12-05T10:00:00  2026-12-05T11:00:00     01:00:00  n[1-2]
future     INACTIVE  2026-12-24T08:00:00              Unknown    UNLIMITED  n5'
  [ "$out" = "$want" ] || fail "sinfo -T: got
$out"
  expect 0 sinfo --reservation -h
  [ "$out" = "$(tail -n 2 <<< "$want")" ] || fail "sinfo --reservation -h: $out"

  expect 0 scontrol create reservation ReservationName=r1 StartTime=2026-12-05T10:00 \
    Duration=90 nodes=n[1-2] Users=alice,bob
  [ "$out" = "Reservation created: r1" ] || fail "create: $out"
  [ "$(last_record)" = "resv create name=r1 set=start,end,nodes,users, start=1796464800000 end=1796470200000 nodes=n[1-2] users=alice,bob accounts=" ] ||
    fail "create sent: $(last_record)"
  expect 0 scontrol create res StartTime=now Duration=UNLIMITED Nodes=n1 Accounts=physics
  [ "$out" = "Reservation created: physics_1" ] || fail "create without a name: $out"
  [[ $(last_record) == *" end=0 nodes=n1 users= accounts=physics" ]] || fail "unlimited: $(last_record)"
  lines=$(wc -l < "$dir/record")
  expect 1 scontrol create reservation StartTime=now Duration=60 Nodes=n1 Users=alice Flags=STATIC_ALLOC
  [[ $out == "scontrol: error: create reservation: Flags=STATIC_ALLOC: flag STATIC_ALLOC is not supported"* ]] ||
    fail "Flags=STATIC_ALLOC: $out"
  expect 1 scontrol create reservation StartTime=now Duration=60 Nodes=n1 Users=alice CoreCnt=4
  [[ $out == "scontrol: error: create reservation: CoreCnt=4: unknown"*"'CoreCnt'"* ]] ||
    fail "unknown key: $out"
  expect 1 scontrol create reservation StartTime=now EndTime=now+1hour Duration=60 Nodes=n1 Users=a
  [[ $out == *"EndTime=now+1hour and Duration=60"* ]] || fail "EndTime and Duration: $out"
  expect 1 scontrol create reservation StartTime=now Duration=60 Users=alice
  [[ $out == *"Nodes= or Licenses= is required"* ]] || fail "no Nodes: $out"
  [ "$(wc -l < "$dir/record")" -eq "$lines" ] || fail "a refused create was sent"
  expect 1 scontrol create reservation StartTime=now Duration=60 Nodes=gpu9 Users=alice
  [ "$out" = "scontrol: error: Nodes: no node gpu9 in the cluster" ] || fail "gschedd's no: $out"

  # Duration without StartTime: the end is the current start (asked first) plus it.
  expect 0 scontrol update ReservationName=maint Duration=2:00:00
  [ "$out" = "Reservation updated." ] || fail "update: $out"
  [ "$(last_record)" = "resv update name=maint set=end, start=0 end=1796472000000 nodes= users= accounts=" ] ||
    fail "update sent: $(last_record)"
  expect 0 scontrol update reservationname=future Users=carol Accounts=
  [[ $(last_record) == "resv update name=future set=users,accounts, "*" users=carol accounts=" ]] ||
    fail "update lists: $(last_record)"
  # Slurm's edits go to gschedd as edits, not as whole lists.
  expect 0 scontrol update ReservationName=maint Users+=bob,carol Accounts=-bio Flags+=daily
  [ "$(last_record)" = "resv update name=maint set= start=0 end=0 nodes= users= accounts= +users=bob,carol -accounts=bio +flags=2" ] ||
    fail "edits sent: $(last_record)"
  expect 0 scontrol create reservation StartTime=now Duration=60 Nodes=n1 Users=alice Flags=WEEKDAY
  [[ $(last_record) == "resv create "*" flags=4" ]] || fail "flags sent: $(last_record)"
  lines=$(wc -l < "$dir/record")
  expect 1 scontrol update ReservationName=maint Users=+a,b
  [[ $out == *"not a mix"* ]] || fail "a mixed list: $out"
  [ "$(wc -l < "$dir/record")" -eq "$lines" ] || fail "a refused edit was sent"
  expect 1 scontrol update ReservationName=nope Nodes=n3
  [ "$out" = "scontrol: error: Reservation nope not found" ] || fail "update missing: $out"

  expect 0 scontrol delete ReservationName=maint
  [ -z "$out" ] || fail "delete printed: $out"
  [[ $(last_record) == "resv delete name=maint "* ]] || fail "delete sent: $(last_record)"
  expect 0 scontrol delete reservation future
  [[ $(last_record) == "resv delete name=future "* ]] || fail "delete reservation: $(last_record)"
  expect 1 scontrol delete reservation nope
  [ "$out" = "scontrol: error: Reservation nope not found" ] || fail "delete missing: $out"
  expect 1 scontrol delete maint
  [[ $out == *"ReservationName=NAME"* ]] || fail "delete without a name: $out"
fi
[ $failures -eq 0 ] && echo "scontrol: ok"
exit $((failures > 0))
