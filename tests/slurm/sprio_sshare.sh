#!/usr/bin/env bash
# sprio_sshare.sh BIN_DIR SRC_DIR: `sprio` and `sshare` against a real gschedd (a `gsched
# up` cluster of one worker). sprio: Slurm's header and widths, only the pending jobs (two
# held ones; a finished job never shows), sorted by job id unless -S says otherwise, -h -l
# -u -j -p -o --json, through a link named sprio, and exit 1 with Slurm's message for bad
# options, job lists and sort keys. The factor values are the scheduler's to fill: only the
# structure is checked. sshare: the header and its dashes, -n, -P, -p, --json, the filters,
# refusals. sdiag: the jobs submitted, started and ended (completed, then one cancelled),
# pending and running, the passes; --json; root's -r counts again from zero; another user's
# -r is refused.
name="cli_sprio_sshare"
. "$(dirname "$0")/../integration/lib.sh"

# run WANT_STATUS CMD...: runs gsched CMD..., leaves stdout in $out and stderr in $err.
run() {
  local want=$1 rc
  shift
  out=$("$bin/gsched" "$@" 2>"$tmp/stderr")
  rc=$?
  err=$(cat "$tmp/stderr")
  if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' <<< "$err"; then
    fail "gsched $*: sanitizer report: $err"
  fi
  [ "$rc" -eq "$want" ] || fail "gsched $*: exit $rc, want $want; stdout: $out; stderr: $err"
}
# has TEXT LITERAL: some line of TEXT holds LITERAL.
has() { grep -qF -- "$2" <<< "$1" || fail "missing '$2' in:"$'\n'"$1"; }
# lines TEXT N: TEXT has N lines.
lines() { [ "$(grep -c '' <<< "$1")" -eq "$2" ] || fail "want $2 lines, got:"$'\n'"$1"; }
# json_check JSON PYTHON-EXPR: the expression holds over the parsed JSON (as d).
json_check() {
  python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert eval(sys.argv[2]), d' "$1" "$2" ||
    fail "JSON check '$2' failed on: $1"
}

start_cluster --workers 1 --gpus-per-node 0
me=$(id -un)

# A job that ran and ended: never in sprio, which lists pending jobs only.
run 0 sbatch --parsable -o /dev/null --wrap=true
done_id=${out%%;*}
wait_end "$done_id"
run 0 sbatch --hold --parsable -o /dev/null --wrap=true
a=${out%%;*}
run 0 sbatch --hold --parsable -o /dev/null --wrap=true
b=${out%%;*}
[ "$a" -lt "$b" ] || fail "job ids $a, $b"

# --- sprio ---------------------------------------------------------------------------------
header='          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS       NICE'
# A job's line: its id right-aligned in 15, its partition left in 9, then 8 integers 10 wide.
line_re() { printf '^ {%d}%s [a-z0-9_-]{1,9} {0,8}( +-?[0-9]+){8}$' $((15 - ${#1})) "$1"; }
run 0 sprio
lines "$out" 3
[ "$(head -n 1 <<< "$out")" = "$header" ] || fail "sprio header: $(head -n 1 <<< "$out")"
sed -n 2p <<< "$out" | grep -qE "$(line_re "$a")" || fail "first line is not job $a: $out"
sed -n 3p <<< "$out" | grep -qE "$(line_re "$b")" || fail "second line is not job $b: $out"
while IFS= read -r l; do
  [ "${#l}" -eq "${#header}" ] || [ "${#l}" -eq 0 ] || fail "line not ${#header} wide: '$l'"
  # SITE is always 0.
  [ "$(awk '{print $4}' <<< "$l")" = 0 ] || fail "SITE is not 0: '$l'"
done < <(tail -n +2 <<< "$out")
grep -qE "^ +$done_id " <<< "$out" && fail "the finished job $done_id is listed: $out"

run 0 sprio -h
lines "$out" 2
grep -q JOBID <<< "$out" && fail "-h printed the header: $out"

# -S: Slurm's letters; '-' descending. Equal priorities fall back to the job id.
run 0 sprio -h -S -i
[ "$(awk '{print $1}' <<< "$out" | tr '\n' ' ')" = "$b $a " ] || fail "-S -i: $out"
run 0 sprio -h --sort=-y
lines "$out" 2
run 0 sprio -h -S r,i
[ "$(awk '{print $1}' <<< "$out" | tr '\n' ' ')" = "$a $b " ] || fail "-S r,i: $out"

# -l and -u add USER after PARTITION; -l's NICE is Slurm's 11 wide.
run 0 sprio -l
[ "$(head -n 1 <<< "$out")" = '          JOBID PARTITION     USER   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS        NICE' ] ||
  fail "sprio -l header: $(head -n 1 <<< "$out")"
has "$out" " ${me:0:8} "
run 0 sprio -u "$me"
has "$(head -n 1 <<< "$out")" 'PARTITION     USER   PRIORITY'
lines "$out" 3
run 0 sprio -u nosuchuser,other
lines "$out" 1

# -j: one job (also as Slurm's "sprio -j 42"), none pending in the list: Slurm's words.
run 0 sprio -h -j"$b"
lines "$out" 1
grep -qE "$(line_re "$b")" <<< "$out" || fail "-j $b: $out"
run 0 sprio -h -j "$a"
grep -qE "$(line_re "$a")" <<< "$out" || fail "-j $a (operand): $out"
run 0 sprio --jobs="$a,$b" -h
lines "$out" 2
run 0 sprio -j "$done_id"
[ "$out" = "Unable to find jobs matching user/id(s) specified" ] || fail "-j $done_id: $out"
run 0 sprio -p nosuchpartition
[ "$out" = "$header" ] || fail "-p nosuchpartition: $out"

# -o: Slurm's letters.
run 0 sprio -h -o '%i|%r|%Y|%S' -j "$a"
grep -qE "^$a\|[a-z0-9_-]+\|-?[0-9]+\|0$" <<< "$out" || fail "-o: $out"

# --json: the jobs with their priority and factors.
run 0 sprio --json
json_check "$out" "[j['job_id'] for j in d['jobs']] == [$a, $b]"
json_check "$out" "all(set(j) >= {'job_id', 'partition', 'user', 'priority', 'priority_factors'} for j in d['jobs'])"
json_check "$out" "all(j['user'] == '$me' and isinstance(j['priority'], int) for j in d['jobs'])"
json_check "$out" "all(j['priority_factors'] is None or set(j['priority_factors']) == {'age', 'fairshare', 'job_size', 'partition', 'qos', 'nice', 'admin_set'} for j in d['jobs'])"

# Through a link named sprio, gsched is sprio.
mkdir -p "$tmp/links"
ln -s "$bin/gsched" "$tmp/links/sprio"
ln -s "$bin/gsched" "$tmp/links/sshare"
out=$("$tmp/links/sprio" -h 2>&1) || fail "sprio through the link failed: $out"
lines "$out" 2

# Refusals: exit 1, Slurm's words.
run 1 sprio -j 12x
has "$err" "sprio: error: Invalid job id: 12x"
run 1 sprio --bogus
has "$err" "sprio: unrecognized option '--bogus'"
run 1 sprio -S z
has "$err" "sprio: error: Invalid sort specification: z"
run 1 sprio -n
has "$err" "sprio: error: -n/--norm is not supported"
run 1 sprio -w
has "$err" "sprio: error: -w/--weights is not supported"
run 1 sprio -l -o '%i'
has "$err" "sprio: error: Options -o(--format) and -l(--long) are mutually exclusive"
run 1 sprio -o '%z'
has "$err" "sprio: error: invalid field '%z'"
run 1 sprio stray
has "$err" "sprio: error: Unrecognized option: stray"
run 0 sprio --help
has "$out" "Usage: sprio"

# --- sshare --------------------------------------------------------------------------------
run 0 sshare
[ "$(head -n 1 <<< "$out")" = 'Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare ' ] ||
  fail "sshare header: '$(head -n 1 <<< "$out")'"
[ "$(sed -n 2p <<< "$out")" = '-------------------- ---------- ---------- ----------- ----------- ------------- ---------- ' ] ||
  fail "sshare dashes: '$(sed -n 2p <<< "$out")'"
width=$(head -n 1 <<< "$out" | awk '{print length($0)}')
# Every line: the account (indented), a user or blanks, 2 integers and 3 fractions where
# Slurm puts them; 6 decimals.
data_re='^ *[^ ]+ +([^ ]+ +)?[0-9]+ +[0-9]+\.[0-9]{6} +[0-9]+ +[0-9]+\.[0-9]{6} +[0-9]+\.[0-9]{6} $'
while IFS= read -r l; do
  [ "${#l}" -eq "$width" ] || fail "sshare line not $width wide: '$l'"
  grep -qE "$data_re" <<< "$l" || fail "sshare line: '$l'"
done < <(tail -n +3 <<< "$out")
nlines=$(grep -c '' <<< "$out")
[ "$nlines" -ge 3 ] || fail "sshare printed no share line: $out"

run 0 sshare -n
lines "$out" $((nlines - 2))
run 0 sshare -h -a
lines "$out" $((nlines - 2))
run 0 sshare -P
[ "$(head -n 1 <<< "$out")" = 'Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare' ] ||
  fail "sshare -P header: $(head -n 1 <<< "$out")"
lines "$out" $((nlines - 1))
tail -n +2 <<< "$out" | grep -qvE '^[^|]*(\|[^|]*){6}$' && fail "sshare -P lines: $out"
run 0 sshare -p -n
lines "$out" $((nlines - 2))
grep -qvE '^[^|]*(\|[^|]*){6}\|$' <<< "$out" && fail "sshare -p lines: $out"

run 0 sshare --json
json_check "$out" "isinstance(d['decay_half_life_s'], int) and len(d['shares']) == $((nlines - 2))"
json_check "$out" "all(set(s) == {'account', 'user', 'parent', 'depth', 'raw_shares', 'norm_shares', 'raw_usage', 'effective_usage', 'fairshare'} for s in d['shares'])"
json_check "$out" "d['shares'][0]['depth'] == 0 and d['shares'][0]['parent'] == ''"
# Filters: no such account lists nothing; -U only user lines; -u keeps the account lines.
run 0 sshare -n -A nosuchaccount
[ -z "$out" ] || fail "sshare -A nosuchaccount: $out"
run 0 sshare --json -U
json_check "$out" "all(s['user'] != '' for s in d['shares'])"
run 0 sshare --json -u nosuchuser
json_check "$out" "all(s['user'] == '' for s in d['shares'])"

out=$("$tmp/links/sshare" -n 2>&1) || fail "sshare through the link failed: $out"
lines "$out" $((nlines - 2))
run 1 sshare -l
has "$err" "sshare: error: -l/--long is not supported"
run 1 sshare --bogus
has "$err" "sshare: unrecognized option '--bogus'"
run 1 sshare -A
has "$err" "sshare: option '-A' requires an argument"
run 0 sshare --help
has "$out" "Usage: sshare"

# --- sdiag --------------------------------------------------------------------------------------
run 0 sdiag
has "$out" "sdiag output at "
has "$out" "Jobs submitted: 3"
has "$out" "Jobs started:   1"
has "$out" "Jobs completed: 1"
has "$out" "Jobs canceled:  0"
has "$out" "Jobs pending:   2"
has "$out" "Jobs running:   0"
has "$out" "Main schedule statistics (microseconds):"
has "$out" "Total backfilled jobs (since last stats cycle start): 0"
run 0 scancel "$a"
wait_for "the cancel to be counted" 10 eval \
  '"$bin/gsched" sdiag --json | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(d[\"jobs_cancelled\"] != 1)"'
run 0 sdiag --json
json_check "$out" "d['jobs_submitted'] == 3 and d['jobs_completed'] == 1 and d['jobs_pending'] == 1"
json_check "$out" "d['plan_passes'] > 0 and d['plan_max_us'] >= d['plan_last_us'] and d['nodes'] == 1"
json_check "$out" "d['since_ms'] <= d['now_ms'] and d['cli_connections'] >= 1"
before=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["now_ms"])' "$out")
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp" "$state"
  out=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$bin/gsched" sdiag -r 2>&1) &&
    fail "nobody reset the counters: $out"
  has "$out" "sdiag: error: only root may reset the counters"
  run 0 sdiag --json
  json_check "$out" "d['jobs_submitted'] == 3"
  run 0 sdiag -r
  has "$out" "Reset scheduling statistics"
  run 0 sdiag --json
  json_check "$out" "d['jobs_submitted'] == 0 and d['jobs_cancelled'] == 0 and d['since_ms'] >= $before"
  json_check "$out" "d['jobs_pending'] == 1"
fi
ln -s "$bin/gsched" "$tmp/links/sdiag"
out=$("$tmp/links/sdiag" 2>&1) || fail "sdiag through the link failed: $out"
has "$out" "Jobs pending:   1"
run 1 sdiag --bogus
has "$err" "sdiag: unrecognized option '--bogus'"

run 0 --help
has "$out" "sprio"
has "$out" "sshare"
has "$out" "sdiag"

stop_cluster
check_logs
echo "$name: all checks passed"
