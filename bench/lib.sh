# shellcheck shell=bash
# shellcheck disable=SC2154 # bench_name, tmp, gschedd_pid, load_pid: the caller's
# lib.sh: sourced by the benchmarks that drive a private gschedd with fake workers
# (telemetry.sh, sched_scale.sh, memory.sh). The caller sets bench_name (for messages)
# first; stop_run and cleanup work on its tmp, gschedd_pid and load_pid.

# wait_for SECONDS COMMAND...: polls COMMAND until it succeeds, or fails after SECONDS.
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        if ((SECONDS >= deadline)); then
            echo "$bench_name: timed out waiting for: $*" >&2
            return 1
        fi
        sleep 0.05
    done
}

# utime + stime of a process, in clock ticks.
proc_ticks() {
    local stat fields
    stat=$(<"/proc/$1/stat")
    read -r -a fields <<<"${stat##*) }" # from field 3 (state) on: utime is field 14
    echo $((fields[11] + fields[12]))
}

# A port nothing listens on now (another program could take it first: gschedd then fails).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Stops the load generator and gschedd of the current run, if any.
stop_run() {
    if [ -n "$load_pid" ]; then
        kill "$load_pid" 2>/dev/null || true
        wait "$load_pid" 2>/dev/null || true
        load_pid=""
    fi
    if [ -n "$gschedd_pid" ]; then
        kill "$gschedd_pid" 2>/dev/null || true
        wait "$gschedd_pid" 2>/dev/null || true
        gschedd_pid=""
    fi
}

# The EXIT trap: the run stopped, the temporary directory removed.
cleanup() {
    stop_run
    rm -rf "$tmp"
}
