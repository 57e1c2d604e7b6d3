#!/usr/bin/env bash
# scontrol.sh BIN_DIR: `gsched scontrol show hostnames` expands hostlists as Slurm's does,
# from its argument or $SLURM_JOB_NODELIST, and refuses bad ones and unknown commands
# (exit 1, as Slurm's scontrol).
set -u
gsched=$1/gsched
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
[ $failures -eq 0 ] && echo "scontrol: ok"
exit $((failures > 0))
