#!/usr/bin/env bash
# slurm-views.sh GSCHED FAKE_GSCHEDD: squeue, sinfo, sacct, scancel and scontrol against
# fake_gschedd (its jobs, partitions and nodes are listed in fake_gschedd.c): the exact lines
# each prints, what scancel and scontrol send (the fake's RECORD), and Slurm's exit status 1
# with a message naming the culprit for bad options, formats, ids and states.
set -u
gsched=$1
fake=$2
fail() { echo "slurm-views: $*" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/gsched-slurm.XXXXXX")
fake_pid=
cleanup() { [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
export GSCHED_SOCKET=$dir/gschedd.sock
"$fake" "$GSCHED_SOCKET" "$dir/record" &
fake_pid=$!
for _ in $(seq 100); do [ -S "$GSCHED_SOCKET" ] && break; sleep 0.05; done
[ -S "$GSCHED_SOCKET" ] || fail "fake_gschedd did not start"
: > "$dir/record"

# run WANT_STATUS CMD...: runs gsched, leaves stdout in $out and stderr in $err.
run() {
  local want=$1 rc
  shift
  out=$("$gsched" "$@" 2>"$dir/stderr")
  rc=$?
  err=$(cat "$dir/stderr")
  if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' <<< "$err"; then
    fail "gsched $*: sanitizer report: $err"
  fi
  [ "$rc" -eq "$want" ] || fail "gsched $*: exit $rc, want $want; stdout: $out; stderr: $err"
}
# same WANT: stdout must be exactly WANT (a heredoc on stdin when WANT is -).
same() {
  local want=$1
  [ "$want" = - ] && want=$(cat)
  [ "$out" = "$want" ] || fail "got:
$out
want:
$want"
}
has() { grep -qF -- "$2" <<< "$1" || fail "missing '$2' in: $1"; }
last_record() { tail -n 1 "$dir/record"; }

# --- squeue --------------------------------------------------------------------------------
# Slurm's default columns and widths, sorted by partition, state (pending, running,
# suspended), priority; the pending elements of array 50 that wait for the same reason folded
# into one line; suspended job 49 listed too, as S, its TIME stopped at 4:00.
run 0 squeue
head -n 5 <<< "$out" > "$dir/got"
cat > "$dir/want" <<'EOF'
             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
        50_[1-3,5]     debug    sweep    alice PD       0:00      1 (JobArrayTaskLimit)
              50_4     debug    sweep    alice PD       0:00      1 (JobHeldUser)
              50_0     debug    sweep    alice  R       1:05      1 n3
                43       gpu a-much-l     1001 PD       0:00      1 (Resources)
EOF
diff "$dir/want" "$dir/got" >&2 || fail "squeue default listing"
[ "$(wc -l <<< "$out")" -eq 7 ] || fail "squeue: $out"
grep -qxE '                42       gpu    train    alice  R       0:[0-9]{2}      2 n\[1-2\]' \
  <<< "$(sed -n 6p <<< "$out")" || fail "squeue row 42: $out"
[ "$(tail -n 1 <<< "$out")" = '                49       gpu     ckpt    alice  S       4:00      1 n1' ] ||
  fail "squeue row 49 (suspended): $out"
# A suspended job: S / SUSPENDED, TIME and TIME_LEFT from the time it ran before it was
# suspended (600 s since its start, less 300 s suspended now and 60 s before), which stand
# still; its end is its start, limit and earlier suspension. -t S selects it, -t R not.
run 0 squeue -h -j 49 -o '%i|%t|%T|%M|%L|%l|%R|%r'
same "49|S|SUSPENDED|4:00|56:00|1:00:00|n1|None"
run 0 squeue -h -t S -o %i
same "49"
run 0 squeue -h --states=suspended,PD -p gpu -o '%i %t'
same "$(printf '43 PD\n49 S')"
run 0 squeue -l -h -j 49  # %.8T cuts the state, as Slurm's -l does
has "$out" " SUSPENDE       4:00   1:00:00 "

run 0 squeue -r -h -p debug -t PD -o '%i %r'
same - <<'EOF'
50_1 JobArrayTaskLimit
50_2 JobArrayTaskLimit
50_3 JobArrayTaskLimit
50_5 JobArrayTaskLimit
50_4 JobHeldUser
EOF
run 0 squeue -h -o '%i|%T|%r|%b|%l|%C|%D|%F|%K|%A|%a|%P' -j 50_4
same "50_4|PENDING|JobHeldUser|gres/gpu:1|30:00|4|1|50|4|54|ml|debug"
run 0 squeue --noheader --format='%i %N %M' --jobs=50 --states=r
same "50_0 n3 1:05"
run 0 squeue -h -o '%.5i|%-6j|%q|%u' -n train
same "   42|train |normal|alice"
run 0 squeue -h -o %i -u 1001
same "43"
run 0 squeue -h -O 'JobID:4,Name:8,StateCompact:3' -u alice -t R
same "$(printf '50  sweep   R  \n42  train   R  ')"
run 0 squeue -h -t all -n eval,old -o '%i %t %R'
same "$(printf '48 CA n5\n47 F (NonZeroExitCode)')"
SQUEUE_FORMAT='%i:%t' run 0 squeue -h -j 43
same "43:PD"
# --start: pending jobs, the soonest expected start first, Slurm's columns.
TZ=UTC run 0 squeue --start
same - <<'EOF'
             JOBID PARTITION      NAME     USER ST           START_TIME  NODES SCHEDNODES           NODELIST(REASON)
                43       gpu a-much-lo     1001 PD  2026-12-05T11:00:00      1 (null)               (Resources)
        50_[1-3,5]     debug     sweep    alice PD                  N/A      1 (null)               (JobArrayTaskLimit)
              50_4     debug     sweep    alice PD                  N/A      1 (null)               (JobHeldUser)
EOF
TZ=UTC run 0 squeue --start -h -o '%i %S' -t PD -j 43,50_4
same "$(printf '43 2026-12-05T11:00:00\n50_4 N/A')"
run 1 squeue --bogus
has "$err" "squeue: unrecognized option '--bogus'"
run 0 squeue -h -o '%i|%B|%c|%f|%G|%h|%k|%o|%v|%y|%z|%d|%w|%O|%H|%n|%x|%p' -j 42,43
same "$(printf '43|n/a|1|(null)|0|OK|(null)|(null)|(null)|0|*:*:*|0|(null)|0|*|||0.00000000232831\n42|n1|8|(null)|0|OK|sweep 3|/home/alice/train.sh|(null)|10|*:*:*|0|ml7|0|*|||0.00000000000000')"
run 0 squeue -h -O 'BatchHost:4,Nice:4,Comment:9,GroupID:3' -j 42
same "n1  10  sweep 3  0  "
run 1 squeue -o '%.8X'
has "$err" "squeue: error: invalid field '%X'"
run 1 squeue -O 'JobID,Nope'
has "$err" "invalid field 'Nope'"
run 1 squeue -t PD,bogus
has "$err" "squeue: error: Invalid job state specified: bogus"
run 1 squeue -j 12x
has "$err" "squeue: error: Invalid job id: 12x"
run 1 squeue -o
has "$err" "squeue: option '-o' requires an argument"

# --- sinfo ---------------------------------------------------------------------------------
run 0 sinfo
same - <<'EOF'
PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up   infinite      1    mix n1
gpu*         up   infinite      1  alloc n2
gpu*         up   infinite      2   idle n[5,7]
gpu*         up   infinite      1  drain n4
gpu*         up   infinite      1   down n6
debug        up      30:00      1    mix n3
debug        up      30:00      1   idle n5
EOF
run 0 sinfo -s
same - <<'EOF'
PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST
gpu*         up   infinite          2/2/2/6 n[1-2,4-7]
debug        up      30:00          1/1/0/2 n[3,5]
EOF
run 0 sinfo -N -p debug
same - <<'EOF'
NODELIST  NODES PARTITION STATE 
n3            1 debug     mix   
n5            1 debug     idle  
EOF
run 0 sinfo -h -t idle,drain
same - <<'EOF'
gpu*         up   infinite      2   idle n[5,7]
gpu*         up   infinite      1  drain n4
debug        up      30:00      1   idle n5
EOF
run 0 sinfo -p debug -o '%R %c %m %G %D %C %A %T %N'
same - <<'EOF'
PARTITION CPUS MEMORY GRES NODES CPUS(A/I/O/T) NODES(A/I) STATE NODELIST
debug 16 65536 gpu:4 1 4/12/0/16 1/0 mixed n3
debug 16 65536 gpu:4 1 0/16/0/16 0/1 idle n5
EOF
run 0 sinfo -h -n 'n[1-2]' -o '%N %t'
same "$(printf 'n1 mix\nn2 alloc')"
run 1 sinfo -o '%Q'
has "$err" "sinfo: error: invalid field '%Q'"
run 1 sinfo -t sleepy
has "$err" "sinfo: error: invalid node state specified: sleepy"
run 1 sinfo -X
has "$err" "sinfo: invalid option -- 'X'"

# --- sacct ---------------------------------------------------------------------------------
run 0 sacct -a -S 2000-01-01
same - <<'EOF'
JobID           JobName  Partition    Account  AllocCPUS      State ExitCode 
------------ ---------- ---------- ---------- ---------- ---------- -------- 
42                train        gpu         ml         16    RUNNING      0:0 
43           a-much-lo+        gpu                     0    PENDING      0:0 
47                 eval        gpu         ml          8     FAILED      2:0 
48                  old        gpu         ml          8 CANCELLED+     0:15 
49                 ckpt        gpu         ml          8  SUSPENDED      0:0 
50_0              sweep      debug         ml          4    RUNNING      0:0 
50_1              sweep      debug         ml          0    PENDING      0:0 
50_2              sweep      debug         ml          0    PENDING      0:0 
50_3              sweep      debug         ml          0    PENDING      0:0 
50_4              sweep      debug         ml          0    PENDING      0:0 
50_5              sweep      debug         ml          0    PENDING      0:0 
EOF
run 0 sacct -j 41 -P --format=jobid,State,exitcode,Elapsed
same "$(printf 'JobID|State|ExitCode|Elapsed\n41|COMPLETED|0:0|00:01:01')"
run 0 sacct -j 41 -n -P -o CPUTime,CPUTimeRAW,TimelimitRaw,ReqCPUS,ReqNodes,ReqTRES,GID,Comment,Constraints,Reservation,WCKey
same "00:08:08|488|UNLIMITED|8|1|cpu=8,node=1,billing=8,gres/gpu=8|0|prep data||maint|prep"
run 0 sacct -a -S 2000-01-01 -p -n -X -s F,CA --format=JobID,JobName%-6,State,NodeList,Reason
same "$(printf '47|eval|FAILED|n5|NonZeroExitCode|\n48|old|CANCELLED by 1000|n5|None|')"
run 0 sacct -j 50_4,43 -o 'jobid%6,jobidraw,user,timelimit,nnodes'
same - <<'EOF'
 JobID JobIDRaw          User  Timelimit   NNodes 
------ ------------ --------- ---------- -------- 
    43 43                1001  UNLIMITED        1 
  50_4 54               alice   00:30:00        1 
EOF
run 0 sacct -u alice -S 2000-01-01 -E now -n -P -o jobid -r gpu
same "$(printf '42\n47\n48\n49')"
run 0 sacct -a -S 2000-01-01 -n -X -P -s S -o jobid,state,elapsed,elapsedraw
same "49|SUSPENDED|00:04:00|240"
run 0 sacct -a -S 2000-01-01 -n -X -P -s R -o jobid
same "$(printf '42\n50_0')"
# Suspended: 49's 60 s before and its stretch under way (300 s and the seconds since the
# fake started); 42 never was.
run 0 sacct -j 42,49 -n -X -P -o jobid,suspended
grep -qx '42|00:00:00' <<< "$out" && grep -qE '^49\|00:06:[0-5][0-9]$' <<< "$out" ||
  fail "sacct Suspended: $out"
run 1 sacct --format=JobID,bogus
has "$err" 'sacct: error: Invalid field requested: "bogus"'
run 1 sacct -S yesterday
has "$err" "sacct: error: Invalid time specification (-S): yesterday"
run 1 sacct -s XX
has "$err" "sacct: error: Invalid state specified: XX"

# --- scancel -------------------------------------------------------------------------------
# Plain ids as typed; array elements looked up and sent as their own job ids; silent.
run 0 scancel 42 '50_[3,5]' -s USR1
same ""
[ -z "$err" ] || fail "scancel was not silent: $err"
[ "$(last_record)" = "cancel ids=42,53,55 signal=10" ] || fail "scancel sent: $(last_record)"
run 0 scancel --signal=TERM 50_1
[ "$(last_record)" = "cancel ids=51 signal=15" ] || fail "scancel element: $(last_record)"
run 0 scancel -b 42
[ "$(last_record)" = "cancel ids=42 signal=9 batch" ] || fail "scancel -b: $(last_record)"
run 0 scancel --batch -s USR1 42
[ "$(last_record)" = "cancel ids=42 signal=10 batch" ] || fail "scancel --batch -s: $(last_record)"
run 0 scancel -u alice -t PD
[ "$(last_record)" = "cancel ids=51,52,53,55,54 signal=0" ] || fail "scancel -u -t: $(last_record)"
lines=$(wc -l < "$dir/record")
run 0 scancel -u nobody
[ "$(wc -l < "$dir/record")" -eq "$lines" ] || fail "scancel sent a cancel for no job"
run 1 scancel 7
has "$err" "scancel: error: Kill job error on job id 7: Invalid job id specified"
run 1 scancel 50_9
has "$err" "scancel: error: Kill job error on job id 50_*: Invalid job id specified"
run 1 scancel
has "$err" "scancel: error: No job identification provided"
run 1 scancel -s NOPE 42
has "$err" "scancel: error: Invalid job signal: NOPE"
run 1 scancel --interactive 42
has "$err" "--interactive is not supported"
run 1 scancel 42x
has "$err" "scancel: error: Invalid job id 42x"

# --- scontrol ------------------------------------------------------------------------------
run 0 scontrol show job 42
has "$out" "JobId=42 JobName=train"
has "$out" "   UserId=alice(1000) GroupId="
has "$out" "   Priority=0 Nice=0 Account=ml QOS=normal"
has "$out" "   JobState=RUNNING Reason=None Dependency=(null)"
has "$out" "   Requeue=1 Restarts=0 BatchFlag=0 Reboot=0 ExitCode=0:0"
has "$out" "   RunTime=00:00:0"
has "$out" " TimeLimit=UNLIMITED TimeMin=N/A"
has "$out" "   Partition=gpu"
has "$out" "   NodeList=n[1-2]"
has "$out" "   BatchHost=n1"
has "$out" "   NumNodes=2 NumCPUs=16 NumTasks=2 CPUs/Task=8"
has "$out" "   ReqTRES=cpu=16,node=2,billing=16,gres/gpu=4"
has "$out" "   Command=python3 train.py --name 'my run'"
has "$out" "   WorkDir=/home/alice"
has "$out" "   Comment=sweep 3"
has "$out" "   ReqNodeList=(null) ExcNodeList=(null)"
has "$out" "   MinCPUsNode=8 MinMemoryNode=0 MinTmpDiskNode=0"
has "$out" "   Features=(null) DelayBoot=00:00:00"
has "$out" "   OverSubscribe=OK Contiguous=0 Network=(null)"
has "$out" "   StdOut=/home/alice/slurm-42.out"
has "$out" "   TresPerNode=gres/gpu:2"
run 0 scontrol -o show job 50_4
[ "$(wc -l <<< "$out")" -eq 1 ] || fail "--oneliner: $out"
has "$out" "JobId=54 ArrayJobId=50 ArrayTaskId=4 JobName=sweep UserId=alice(1000)"
has "$out" " JobState=PENDING Reason=JobHeldUser Dependency=(null) "
has "$out" " RunTime=00:00:00 TimeLimit=00:30:00 TimeMin=N/A "
has "$out" " StartTime=Unknown EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 Partition=debug ReqNodeList=(null) ExcNodeList=(null) NodeList=(null) NumNodes=1"
# A suspended job: JobState=SUSPENDED, RunTime stopped, when it was suspended and what it had
# run by then on the line after StartTime's, as Slurm's record puts them.
TZ=UTC run 0 scontrol show job 49
has "$out" "   JobState=SUSPENDED Reason=None Dependency=(null)"
has "$out" "   RunTime=00:04:00 TimeLimit=01:00:00 TimeMin=N/A"
grep -qE '^   StartTime=[0-9-]+T[0-9:]+ EndTime=[0-9-]+T[0-9:]+ Deadline=N/A
   SuspendTime=[0-9-]+T[0-9:]+ SecsPreSuspend=240$' <<< "$(grep -A1 '^   StartTime=' <<< "$out")" ||
  fail "show job 49's times: $out"
run 0 scontrol show job 42
has "$out" "   SuspendTime=None SecsPreSuspend=0"
# Resumed, and ended since: when it resumed, and what it had run by then (Slurm keeps both).
TZ=UTC run 0 scontrol show job 41
has "$out" "   SuspendTime=1970-01-01T00:00:31 SecsPreSuspend=30"
run 0 scontrol show jobs 50
[ "$(grep -c '^JobId=' <<< "$out")" -eq 6 ] || fail "show job of an array: $out"
run 1 scontrol show job 99
has "$err" "scontrol: error: Invalid job id specified: 99"
run 0 scontrol show partition debug
same - <<'EOF'
PartitionName=debug
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   AllocNodes=ALL Default=NO QoS=N/A
   DefaultTime=NONE Hidden=NO MaxNodes=UNLIMITED MaxTime=00:30:00 MinNodes=0
   Nodes=n[3,5]
   State=UP TotalCPUs=32 TotalNodes=2
EOF
run 0 scontrol -o show partitions
same - <<'EOF'
PartitionName=gpu AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=YES QoS=N/A DefaultTime=NONE Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 Nodes=n[1-2,4-7] State=UP TotalCPUs=96 TotalNodes=6
PartitionName=debug AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=NO QoS=N/A DefaultTime=NONE Hidden=NO MaxNodes=UNLIMITED MaxTime=00:30:00 MinNodes=0 Nodes=n[3,5] State=UP TotalCPUs=32 TotalNodes=2
EOF
run 1 scontrol show partition nope
has "$err" "scontrol: error: Partition nope not found"
run 0 scontrol show node n1
same - <<'EOF'
NodeName=n1
   CPUAlloc=8 CPUEfctv=16 CPUTot=16
   AvailableFeatures=h100,nvlink
   Gres=gpu:4
   RealMemory=65536 AllocMem=16384 FreeMem=49152
   State=MIXED TmpDisk=0
   Partitions=gpu
   CfgTRES=cpu=16,mem=65536M,billing=16,gres/gpu=4
   AllocTRES=cpu=8,mem=16384M,gres/gpu=2
EOF
run 0 scontrol -o show nodes 'n[4-5]'
same - <<'EOF'
NodeName=n4 CPUAlloc=0 CPUEfctv=16 CPUTot=16 AvailableFeatures=h100,nvlink Gres=gpu:4 RealMemory=65536 AllocMem=0 FreeMem=65536 State=IDLE+DRAIN TmpDisk=0 Partitions=gpu CfgTRES=cpu=16,mem=65536M,billing=16,gres/gpu=4 AllocTRES= Reason=maintenance
NodeName=n5 CPUAlloc=0 CPUEfctv=16 CPUTot=16 AvailableFeatures=h100,nvlink Gres=gpu:4 RealMemory=65536 AllocMem=0 FreeMem=65536 State=IDLE TmpDisk=0 Partitions=gpu,debug CfgTRES=cpu=16,mem=65536M,billing=16,gres/gpu=4 AllocTRES=
EOF
run 1 scontrol show node n99
has "$err" "scontrol: error: Node n99 not found"
run 0 scontrol requeue 42
[ "$(last_record)" = "requeue ids=42 hold=0" ] || fail "requeue sent: $(last_record)"
run 1 scontrol requeue 42,43
[ "$(last_record)" = "requeue ids=42,43 hold=0" ] || fail "requeue sent: $(last_record)"
has "$err" "scontrol: error: job 43: job is pending: nothing to requeue"
run 0 scontrol requeuehold 50_0
[ "$(last_record)" = "requeue ids=50 hold=1" ] || fail "requeuehold sent: $(last_record)"
run 0 scontrol hold '50_[1-2]'
[ "$(last_record)" = "hold ids=51,52" ] || fail "hold sent: $(last_record)"
run 0 scontrol release 54 43
[ "$(last_record)" = "release ids=54,43" ] || fail "release sent: $(last_record)"
run 1 scontrol hold 7
has "$err" "scontrol: error: Invalid job id specified for job 7"
# suspend / resume: SuspendRequest with the ids (array elements looked up) and resume set
# or not, silent on success; each refused job named, exit 1.
run 0 scontrol suspend 42,50_0
[ "$(last_record)" = "suspend ids=42,50 resume=0" ] || fail "suspend sent: $(last_record)"
[ -z "$out$err" ] || fail "suspend was not silent: $out $err"
run 0 scontrol resume 49
[ "$(last_record)" = "suspend ids=49 resume=1" ] || fail "resume sent: $(last_record)"
[ -z "$out$err" ] || fail "resume was not silent: $out $err"
run 1 scontrol suspend 43 49 7
[ "$(last_record)" = "suspend ids=43,49,7 resume=0" ] || fail "suspend sent: $(last_record)"
has "$err" "scontrol: error: job 43 is not running: only running jobs can be suspended"
has "$err" "scontrol: error: job 49 is already suspended"
has "$err" "scontrol: error: Invalid job id specified for job 7"
run 1 scontrol resume 42
has "$err" "scontrol: error: job 42 is not suspended"
lines=$(wc -l < "$dir/record")
run 1 scontrol suspend
has "$err" "a job id is required"
run 1 scontrol resume 42+1
has "$err" "gsched acts on a heterogeneous job as a whole"
[ "$(wc -l < "$dir/record")" -eq "$lines" ] || fail "a refused suspend was sent"
run 1 scontrol hold
has "$err" "a job id is required"
run 1 scontrol show bogus
has "$err" "scontrol: error: invalid entity: bogus for keyword: show"
run 1 scontrol frobnicate
has "$err" "scontrol: error: invalid keyword: frobnicate"

# --- called by their Slurm names -----------------------------------------------------------
for name in squeue sinfo sacct scancel scontrol; do ln -s "$gsched" "$dir/$name"; done
out=$("$dir/squeue" -h -o %i -j 43) || fail "as squeue: $out"
[ "$out" = 43 ] || fail "as squeue: $out"
out=$("$dir/sinfo" -h -o %P -p debug) || fail "as sinfo: $out"
[ "$out" = debug ] || fail "as sinfo: $out"
out=$("$dir/sacct" -n -P -o state -j 41) || fail "as sacct: $out"
[ "$out" = COMPLETED ] || fail "as sacct: $out"
"$dir/scancel" 42 || fail "as scancel"
[ "$(last_record)" = "cancel ids=42 signal=0" ] || fail "as scancel sent: $(last_record)"

echo "slurm-views: ok"
