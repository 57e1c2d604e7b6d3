#!/usr/bin/env bash
# mail.sh BIN_DIR SRC_DIR: the mail gschedd sends about jobs (sbatch --mail-type,
# --mail-user, a job file's [mail]) through scheduler.mail_prog, here a script that logs
# its arguments and SLURM_JOB_* variables. BEGIN and END of a job; FAIL only for a job that
# fails; a dependency that can never be met, once, also across a gschedd restart, and a
# job cancelled for it (--kill-on-invalid-dep); nothing for a job that asks for none; an
# array mailed about once as a whole; a requeue; 50 % of a time limit and the limit itself.
# Bad types and addresses are refused at submit, naming the option or the job file's field.
name="integration_mail"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 0 --heartbeat 1s --kill-grace 1s

mails="$work/mails.log"
cat > "$work/fake-mail" <<EOF2
#!/bin/sh
printf '%s|' "\$@" >> "$mails"
echo "\$SLURM_JOB_MAIL_TYPE|\$SLURM_JOB_ID|\$SLURM_JOB_STATE|\$SLURM_JOB_USER" >> "$mails"
EOF2
chmod 755 "$work/fake-mail"
: > "$mails"
sed -i "s|^\[scheduler\]\$|[scheduler]\nmail_prog = \"$work/fake-mail\"|" "$state/gsched.toml"
grep -q '^mail_prog = ' "$state/gsched.toml" || fail "no [scheduler] table to edit"
restart_sched 1
me=$(id -un)

mailed() { grep -c -- "$1" "$mails"; }

# --- BEGIN and END, to the address given -----------------------------------------------------
a=$(sbatch_id --mail-type=BEGIN,END --mail-user=alice@example.com -J hello --wrap=true)
wait_end "$a" || fail "job $a failed"
wait_for "job $a's two mails" 10 eval "[ \"\$(mailed \"Job_id=$a \")\" = 2 ]"
grep -qx -- "-s|Slurm Job_id=$a Name=hello Began, Queued time 00:00:0[0-9]|alice@example.com|Began|$a|RUNNING|$me" "$mails" ||
  fail "BEGIN mail: $(cat "$mails")"
grep -qx -- "-s|Slurm Job_id=$a Name=hello Ended, Run time 00:00:0[0-9], COMPLETED, ExitCode 0|alice@example.com|Ended|$a|COMPLETED|$me" "$mails" ||
  fail "END mail: $(cat "$mails")"
out=$("$bin/gsched" scontrol show job "$a") || fail "scontrol show job $a"
grep -q "MailUser=alice@example.com MailType=BEGIN,END" <<< "$out" || fail "scontrol show job: $out"

# --- srun outside a job: its allocation's mail ----------------------------------------------------
"$bin/gsched" srun --mail-type=END -J srunmail true || fail "srun --mail-type=END"
wait_for "srun's allocation's END mail" 10 grep -q "Name=srunmail Ended, Run time .*, COMPLETED, ExitCode 0|$me|Ended|" "$mails"

# --- FAIL: mailed for a job that fails (to its user), not for one that succeeds ---------------
b=$(sbatch_id --mail-type=FAIL -J bad --wrap="exit 3")
c=$(sbatch_id --mail-type=FAIL -J good --wrap=true)
d=$(sbatch_id -J quiet --wrap=true)
for j in "$b" "$c" "$d"; do wait_end "$j" || true; done
wait_for "job $b's FAIL mail" 10 eval "[ \"\$(mailed \"Job_id=$b \")\" = 1 ]"
grep -qx -- "-s|Slurm Job_id=$b Name=bad Failed, Run time 00:00:0[0-9], FAILED, ExitCode 3|$me|Failed|$b|FAILED|$me" "$mails" ||
  fail "FAIL mail: $(cat "$mails")"
h=$(sbatch_id --mail-type=INVALID_DEPEND -d "afterok:$b" -J after --wrap=true)
wait_for "job $h's INVALID_DEPEND mail" 10 grep -q "Slurm Job_id=$h Name=after Failed, Invalid dependency|$me|Invalid_depend|$h|PENDING" "$mails"
k=$(sbatch_id --mail-type=INVALID_DEPEND --kill-on-invalid-dep=yes -d "afterok:$b" -J killed --wrap=true)
wait_for "job $k's INVALID_DEPEND mail" 10 grep -q "Slurm Job_id=$k Name=killed Failed, Invalid dependency|$me|Invalid_depend|$k|CANCELLED" "$mails"

# --- an array: one mail when its last element ends ------------------------------------------
e=$(sbatch_id --mail-type=END --array=1-3 -J arr --wrap=true)
wait_for "the array's mail" 20 grep -q "Array Summary Job_id=${e}_\*" "$mails"
for id in "$e" $((e + 1)) $((e + 2)); do wait_end "$id" || fail "element $id failed"; done
grep -qx -- "-s|Slurm Array Summary Job_id=${e}_\* ($e) Name=arr Ended, COMPLETED, ExitCode \[0\]|$me|Ended|[0-9]*|COMPLETED|$me" "$mails" ||
  fail "array mail: $(cat "$mails")"

# --- a requeue ---------------------------------------------------------------------------------
{ echo "#!/bin/sh"; gate_wait requeue; } > "$work/requeue.sh"
f=$(sbatch_id --mail-type=REQUEUE -J again requeue.sh)
wait_start "$f"
"$bin/gsched" scontrol requeue "$f" || fail "scontrol requeue $f"
wait_for "job $f's REQUEUE mail" 15 grep -q "Slurm Job_id=$f Name=again Requeued, Run time " "$mails"
gate requeue
wait_end "$f" 30 || fail "requeued job $f failed"

# --- a restart: what was mailed before is not mailed again --------------------------------------
restart_sched 1
wait_for "job $h to wait on its dependency again" 10 is "$h" 'j["reason"] == "DependencyNeverSatisfied"'

# --- half the time limit, then the limit (a job file's [mail]) -------------------------------
job_file limit.toml '[resources]
time_limit = "10s"
[mail]
type = ["TIME_LIMIT_50", "TIME_LIMIT"]
user = "ops@example.com"
[run]
command = ["sleep", "30"]'
g=$(submit "$work/limit.toml")
wait_end "$g" 40 || true
expect "$g" 'j["state"] == "TIMEOUT"'
wait_for "job $g's limit mails" 10 eval "[ \"\$(mailed \"Job_id=$g \")\" = 2 ]"
grep -q -- "Slurm Job_id=$g Name=limit Reached 50% of time limit, Run time 00:00:0[5-9]|ops@example.com|Time_limit_50|" "$mails" ||
  fail "50 % mail: $(cat "$mails")"
grep -q -- "Slurm Job_id=$g Name=limit Reached time limit, Run time 00:00:[1-2][0-9]|ops@example.com|Time_limit|" "$mails" ||
  fail "time limit mail: $(cat "$mails")"
[ "$(mailed "Job_id=$c ")" = 0 ] && [ "$(mailed "Job_id=$d ")" = 0 ] ||
  fail "mail for a job that succeeded with FAIL only, or asked for none: $(cat "$mails")"
# the ticks that mailed the 50 % saw job $h waiting too
"$bin/gsched" cancel "$h" > /dev/null || fail "cancel $h"
[ "$(mailed "Job_id=$h ")" = 1 ] || fail "INVALID_DEPEND mailed more than once: $(cat "$mails")"
[ "$(mailed "Job_id=$k ")" = 1 ] || fail "the killed job mailed other than once: $(cat "$mails")"

# --- refused at submit ------------------------------------------------------------------------
before=$(queue_count)
out=$("$bin/gsched" sbatch --mail-type=SOON --wrap=true 2>&1) && fail "--mail-type=SOON accepted"
grep -q -- "--mail-type=SOON: 'SOON' is not a mail type" <<< "$out" || fail "refusal: $out"
out=$("$bin/gsched" sbatch --mail-type=END --mail-user=-oProxyCommand=x --wrap=true 2>&1) &&
  fail "an address that reads as an option was accepted"
grep -q "does not start with '-'" <<< "$out" || fail "refusal: $out"
job_file badmail.toml '[mail]
type = "END"
user = "a b@example.com"
[run]
command = ["true"]'
out=$("$bin/gsched" submit "$work/badmail.toml" 2>&1) && fail "a bad mail.user was accepted"
grep -q "badmail.toml:3:8: mail.user: ' ' in a mail address" <<< "$out" || fail "refusal: $out"
[ "$(queue_count)" = "$before" ] || fail "a refused job was queued"
check_logs
stop_cluster
echo "$name: passed"
