#!/usr/bin/env bash
# readme.sh BIN_DIR SRC_DIR: the README's "Using it" commands, as written there, on a fresh
# local cluster in a temporary directory (its ./.gsched), `gsched` on PATH and the examples
# beside them, as a new user would type them (issue 20): `gsched up` starts, hello.toml's
# 2-node job and hello-slurm.sh's batch script complete on a machine of any size (2 cores
# in CI: the workers share them), the views answer, `gsched down` stops the cluster. Each
# job's output is checked, and no daemon is left behind.
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
cleanup() {
  (cd "$tmp" && "$bin/gsched" down > /dev/null 2>&1)
  for f in "$tmp"/.gsched/*.pid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2> /dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  printf 'readme: %b\n' "$*" >&2
  for f in "$tmp"/.gsched/*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
  done
  exit 1
}
unset GSCHED_SOCKET
export PATH="$bin:$PATH"
cd "$tmp" || exit 1
ln -s "$src/examples" examples

# The indented `gsched ...` lines of the README's "Using it" section, up to the trainer's.
mapfile -t cmds < <(awk '/^## Using it/ {on = 1} /^The trainer/ {on = 0} on && /^    gsched /' \
  "$src/README.md" | sed 's/^    //')
[ "${#cmds[@]}" -ge 6 ] || fail "only ${#cmds[@]} commands found in README.md's Using it"
case ${cmds[0]} in "gsched up "*) ;; *) fail "the first command is not gsched up: ${cmds[0]}" ;; esac
case ${cmds[${#cmds[@]} - 1]} in "gsched down"*) ;; *) fail "the last is not gsched down" ;; esac
for c in "${cmds[@]}"; do
  out=$(timeout 120 bash -c "$c" 2>&1) || fail "README command failed: $c\n$out"
  case $c in
    "gsched submit examples/hello.toml"*)
      grep -qs "rank=3 of 4 on node 1" hello-*-3.out || fail "hello.toml's rank 3: $(cat hello-*.out)" ;;
    "gsched sbatch --wait examples/hello-slurm.sh"*)
      grep -qs "task 3 of 4 on node2" hello-slurm-*.out || fail "hello-slurm.sh: $(cat hello-slurm-*.out)" ;;
    "gsched squeue; gsched sinfo; gsched sacct"*)
      grep -q "hello-sl.*COMPLETED" <<< "$out" || fail "sacct has no hello-slurm line: $out" ;;
  esac
done
for f in .gsched/*.pid; do
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2> /dev/null && fail "gsched down left $(basename "$f" .pid) running"
done
echo "readme: passed (${#cmds[@]} commands)"
