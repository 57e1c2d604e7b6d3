#!/bin/bash
# lib.sh: what a trainer shell test needs, sourced by it after setting $name:
#   trn_test_start BIN   sets bin (BIN made absolute), tmp (a directory removed at exit), py
#   fail MESSAGE...      "$name: MESSAGE" on stderr, exit 1
#   build_shards DIR     a dataset of the licence texts under /usr/share/common-licenses at DIR
#   mpi N COMMAND...     COMMAND under mpirun -np N on this machine (as root too), 300 s at most,
#                        without LeakSanitizer (Open MPI's own allocations)

fail() {
  echo "$name: $*" >&2
  exit 1
}

trn_test_start() {
  bin=$(cd "$1" && pwd) || exit 1
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  py=$(python3 -c 'import sys; print(sys.executable)') || exit 1
}

build_shards() {
  "$bin/gsched" shard build --out "$1" --val-fraction 0.05 /usr/share/common-licenses/* \
    > "$tmp/build.log" 2>&1 || fail "shard build: $(cat "$tmp/build.log")"
}

mpi() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 \
    mpirun -np "$1" --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
    "${@:2}"
}
