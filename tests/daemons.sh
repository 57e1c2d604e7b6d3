# daemons.sh: sourced by the test scripts that start gschedd and gsched-workerd by hand
# (rather than through `gsched up`, tests/integration/lib.sh): a temporary directory, the
# daemons' pids killed on exit, fail (with every daemon log's tail), wait_for (polls with a
# deadline, never a bare sleep), a free loopback port and a configuration using it. Set name= before sourcing; takes
# BIN_DIR SRC_DIR as the script's arguments.
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
pids=()
# The daemons are killed with SIGKILL, so their workers' node groups stay: they are removed
# here (only this test's, gsched-test/TMPNAME in every hierarchy; write_config), as stale
# cpusets slow every later job's cgroup changes on the machine (bench/RESULTS.md).
cleanup() {
  local d
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for d in /sys/fs/cgroup/*/gsched-test/"${tmp##*/}" /sys/fs/cgroup/gsched-test/"${tmp##*/}"; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "$name: $*" >&2
  for f in "$tmp"/*.log; do echo "--- $f" >&2; tail -20 "$f" >&2; done
  exit 1
}
export GSCHED_SOCKET="$tmp/gschedd.sock"

# wait_for DESCRIPTION COMMAND...: retries COMMAND until it succeeds, for at most 15 s.
wait_for() {
  local what=$1 deadline=$((SECONDS + 15))
  shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $what"
    sleep 0.05
  done
}

# A free port, fixed for the test, so that a restarted gschedd is where workers look for it.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# The cluster key the daemons authenticate each other with (proto/auth.h): root's (or the
# test user's) alone.
(umask 077 && head -c 32 /dev/urandom > "$tmp/gsched.key")

# write_config [LINE...]: $tmp/gsched.toml for a gschedd on 127.0.0.1:$port, its socket
# $tmp/gschedd.sock, its state in $tmp/state and the key $tmp/gsched.key; each LINE follows
# in [scheduler] (a LINE may open another section). Workers run root's jobs
# (worker.allow_root_jobs, in the LINEs' [worker] or one added): CI runs the tests as root;
# their jobs' cgroups go under gsched-test/TMPNAME, apart from other tests' nodes.
write_config() {
  local line worker=no
  {
    printf '[scheduler]\nhost = "127.0.0.1"\nport = %s\n' "$port"
    printf 'socket = "%s"\nstate_dir = "%s"\n' "$tmp/gschedd.sock" "$tmp/state"
    printf 'auth_key = "%s"\n' "$tmp/gsched.key"
    for line in "$@"; do
      printf '%s\n' "$line"
      if [ "$line" = "[worker]" ]; then
        printf 'allow_root_jobs = true\ncgroup_parent = "gsched-test/%s"\n' "${tmp##*/}"
        worker=yes
      fi
    done
    [ $worker = yes ] || printf '[worker]\nallow_root_jobs = true\ncgroup_parent = "gsched-test/%s"\n' "${tmp##*/}"
  } > "$tmp/gsched.toml"
}
