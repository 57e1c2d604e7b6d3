#!/usr/bin/env bash
# check-job.sh GSCHED SRC_DIR: `gsched check` accepts a good job file and shows it, and
# rejects a bad one with every problem at FILE:LINE:COL and exit status 1.
set -u
gsched=$1
src=$2
fail() { echo "check-job: $*" >&2; exit 1; }

out=$("$gsched" check "$src/examples/hello.toml") || fail "hello.toml rejected"
grep -q '^name *= hello$' <<< "$out" || fail "no name line in: $out"
json=$("$gsched" check --json "$src/examples/hello.toml") || fail "--json failed"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["resources"]["nodes"] == 2; assert d["run"]["tasks_per_node"] == "per-gpu"' "$json" \
  || fail "bad JSON: $json"

json=$("$gsched" check --json "$src/examples/train-ddp.toml") || fail "train-ddp.toml rejected"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["resources"]["nodes"] == 2; assert d["run"]["launcher"] == "mpi"' "$json" \
  || fail "train-ddp.toml: $json"

bad="$src/tests/cli/bad-job.toml"
err=$("$gsched" check "$bad" 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 1 ] || fail "bad job file: exit $rc, want 1"
for want in "$bad:3:1: unknown key 'gpu_per_node' in resources (did you mean 'resources.gpus_per_node'?)" \
            "$bad:4:14: resources.time_limit must be a duration" \
            "$bad:6:23: run.command[1] must be a string, not integer"; do
  grep -qF "$want" <<< "$err" || fail "missing '$want' in: $err"
done
"$gsched" check /nonexistent/job.toml 2>&1 | grep -q "/nonexistent/job.toml: No such file" \
  || fail "missing file not named"
"$gsched" check 2>/dev/null; [ $? -eq 2 ] || fail "no file: want usage status 2"
echo "check-job: ok"
