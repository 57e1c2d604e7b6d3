#!/usr/bin/env bash
# fairshare.sh BIN_DIR SRC_DIR: multifactor priority with fair share (issue 18), on a
# `gsched up` cluster of one worker with 2 GPUs whose gschedd is restarted with a
# [priority] section and two accounts of equal shares. A job of account "heavy" holds
# both GPUs for a while: sshare shows heavy's usage and a lower fair-share factor than
# "light"'s. Then a heavy job and, after it, a light one are queued behind a blocker: when
# the GPUs free up the light one starts first, and sprio shows why (FAIRSHARE). The usage
# survives a gschedd restart. Refused at submit: an account that does not exist, one the
# user is not a member of, a priority or a negative nice from a user who is not root, and a
# QOS whose access lists (users, accounts) leave the user out; root may use any QOS.
name="integration_fairshare"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 2 --heartbeat 1s

cat >> "$state/gsched.toml" << 'EOF'
[priority]
weight_fairshare = 10000
weight_age = 10
max_age = "1d"
decay_half_life = "7d"
billing_cpu = 0.0
billing_gpu = 10.0
[[account]]
name = "heavy"
shares = 1
users = ["root"]
[[account]]
name = "light"
shares = 1
users = ["root"]
[[qos]]
name = "urgent"
users = ["root"]
accounts = ["light"]
[[qos]]
name = "mine"
users = ["nobody"]
EOF
restart_sched 1

share() { # share ACCOUNT USER FIELD: a field of sshare --json's line
  "$bin/gsched" sshare --json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["shares"]:
    if e["account"] == sys.argv[1] and e["user"] == sys.argv[2]:
        print(e[sys.argv[3]]); break
else:
    sys.exit(1)' "$@"
}
{ echo "#!/bin/sh"; gate_wait use; } > "$work/use.sh"
{ echo "#!/bin/sh"; gate_wait block; } > "$work/block.sh"

# --- heavy uses both GPUs a while: its usage grows, its factor falls ------------------------
use=$(sbatch_id -A heavy --gres=gpu:2 use.sh) || exit 1
wait_start "$use"
wait_for "heavy's usage to be charged" 20 eval '[ "$(share heavy root raw_usage | cut -d. -f1)" -ge 20 ]'
gate use
wait_end "$use" || fail "the heavy job failed"
python3 -c 'import sys; h, l = map(float, sys.argv[1:]); sys.exit(0 if h < l == 1.0 else 1)' \
  "$(share heavy root fairshare)" "$(share light root fairshare)" ||
  fail "fair share: heavy $(share heavy root fairshare), light $(share light root fairshare)"

# --- queued behind a blocker: heavy's job first, light's after; light starts first ---------
block=$(sbatch_id -A light --gres=gpu:2 block.sh) || exit 1
wait_start "$block"
h=$(sbatch_id -A heavy --gres=gpu:2 --wrap=true) || exit 1
l=$(sbatch_id -A light --gres=gpu:2 --wrap=true) || exit 1
wait_for "both to be planned" 10 eval "is $h 'j[\"reason\"] in (\"Resources\", \"Priority\")' && is $l 'j[\"reason\"] in (\"Resources\", \"Priority\")'"
out=$("$bin/gsched" sprio -h -j "$h,$l" 2>&1) || fail "sprio: $out"
python3 - "$h" "$l" "$out" << 'PY' || fail "sprio: $out"
import sys
h, l, out = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {r.split()[0]: r.split() for r in out.splitlines()}
# JOBID PARTITION PRIORITY SITE AGE FAIRSHARE JOBSIZE PARTITION NICE
assert int(rows[l][2]) > int(rows[h][2]), rows
assert int(rows[l][5]) > int(rows[h][5]), rows
PY
gate block
wait_end "$l" || fail "the light job failed"
wait_end "$h" || fail "the heavy job failed"
expect "$l" "j['start_time_ms'] <= $(jq "$h" "j['start_time_ms']")" "light to start before heavy"

# --- the usage is stored: a restarted gschedd keeps it -------------------------------------
before=$(share heavy root raw_usage)
restart_sched 1
after=$(share heavy root raw_usage)
python3 -c 'import sys; b, a = map(float, sys.argv[1:]); sys.exit(0 if a >= 0.9 * b > 0 else 1)' \
  "$before" "$after" || fail "heavy's usage was $before before the restart, $after after"

# --- a QOS with access lists: root may use it ------------------------------------------------
q=$(sbatch_id -q urgent --wrap=true) || exit 1
wait_end "$q" || fail "root's job in QOS urgent failed"

# --- scontrol update QOS= of a pending job: checked as a submit's QOS is ------------------------
h=$(sbatch_id --hold --wrap=true) || exit 1
"$bin/gsched" scontrol update JobId="$h" QOS=urgent || fail "root's QOS=urgent refused"
expect "$h" 'j["qos"] == "urgent"' "QOS urgent after the update"
out=$("$bin/gsched" scontrol update JobId="$h" QOS=nosuch 2>&1) && fail "QOS=nosuch accepted: $out"
case $out in *"no QOS 'nosuch'"*) ;; *) fail "QOS=nosuch: $out" ;; esac
expect "$h" 'j["qos"] == "urgent"' "a refused update to change nothing"
"$bin/gsched" scancel "$h" || fail "scancel $h"

# --- refused at submit, nothing queued ----------------------------------------------------------
count=$(queue_count)
out=$("$bin/gsched" sbatch -A nosuch --wrap=true 2>&1) && fail "account nosuch accepted: $out"
case $out in *"no account 'nosuch'"*) ;; *) fail "account nosuch: $out" ;; esac
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp" "$state" # the socket is 0666: let others through the directories
  mkdir -m 777 "$tmp/nobody" && cd "$tmp/nobody" || exit 1
  as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$bin/gsched" "$@" 2>&1; }
  out=$(as_nobody sbatch -A heavy --wrap=true) && fail "nobody used account heavy: $out"
  case $out in *"not a member of account 'heavy'"*) ;; *) fail "nobody in heavy: $out" ;; esac
  out=$(as_nobody sbatch --nice=-5 --wrap=true) && fail "nobody's negative nice: $out"
  case $out in *"only root may give a negative nice"*) ;; *) fail "negative nice: $out" ;; esac
  printf 'priority = 10\n[run]\ncommand = ["true"]\n' > prio.toml
  out=$(as_nobody submit prio.toml) && fail "nobody set a priority: $out"
  case $out in *"only root may set a job's priority"*) ;; *) fail "priority by nobody: $out" ;; esac
  out=$(as_nobody sbatch -q urgent --wrap=true) && fail "nobody used QOS urgent: $out"
  case $out in
    *"qos: user nobody may not use QOS urgent (it admits users root; accounts light)"*) ;;
    *) fail "QOS urgent by nobody: $out" ;;
  esac
  out=$(as_nobody sbatch -q mine --test-only --wrap=true) || fail "nobody may use QOS mine: $out"
  mine=$(as_nobody sbatch --parsable --hold -q mine -o /dev/null --wrap=true) ||
    fail "nobody's held job: $mine"
  out=$(as_nobody scontrol update JobId="${mine%%;*}" QOS=urgent) && fail "nobody moved to QOS urgent: $out"
  case $out in *"QOS: user nobody may not use QOS urgent"*) ;; *) fail "nobody to urgent: $out" ;; esac
  as_nobody scancel "${mine%%;*}" > /dev/null || fail "nobody's scancel"
  count=$((count + 1)) # that one was queued, and cancelled
  cd "$work" || exit 1
fi
[ "$(queue_count)" = "$count" ] || fail "a refused job was queued"
check_logs
stop_cluster
echo "$name: passed"
