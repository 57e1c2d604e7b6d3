#!/usr/bin/env bash
# chaos.sh BUILD_DIR [SECONDS] [SEED]: a long chaos run (tests/chaos/): gschedd and three
# workers, in network namespaces of their own as root (else on loopback, without link cuts),
# for SECONDS (default 600) of faults drawn from SEED (default: from the clock, printed so
# that a run can be repeated): gschedd and workers killed with -9 and started again, links
# cut and mended, while jobs are submitted at about 5 per second of the run (JOBS overrides).
# Faults overlap (a worker killed while another's link is cut; CHAOS_OVERLAP=0: one at a
# time, as the ctest run).
# Prints the faults injected by kind, the jobs' outcomes and every violation of the
# invariants tests/chaos/check.py checks (aim: 0); exits 1 on any. Keeps the run's files
# (database, daemon logs, tasks' logs) when it finds one, and says where.
set -u
build=$(cd "${1:?usage: bench/chaos.sh BUILD_DIR [SECONDS] [SEED]}" && pwd) || exit 1
secs=${2:-600}
seed=${3:-$(date +%s)}
jobs=${JOBS:-$(python3 -c "print(max(50, int(5 * $secs)))")}
src=$(cd "$(dirname "$0")/.." && pwd)
echo "chaos bench: $build, $secs s, seed $seed, $jobs jobs"
start=$SECONDS
CHAOS_OVERLAP=${CHAOS_OVERLAP:-1} "$src/tests/chaos/chaos.sh" "$build/bin" "$src" "$secs" "$seed" "$jobs"
rc=$?
echo "chaos bench: $((SECONDS - start)) s in all; exit $rc"
exit $rc
