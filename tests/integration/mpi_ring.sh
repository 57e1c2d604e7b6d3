# mpi_ring.sh: what pmix.sh and pmi.sh share, sourced after lib.sh: an MPI program whose
# ranks allreduce their rank numbers (each prints "rank R of N node NODE sum S"; an argument
# names a rank that calls MPI_Abort(7) first), and the checks of its output.

# ring_build MPICC: $work/ring, built with MPICC.
ring_build() {
  cat > "$work/ring.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0, abort_rank = argc > 1 ? atoi(argv[1]) : -1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == abort_rank)
        MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d node %s sum %d\n", rank, size, getenv("SLURMD_NODENAME"), sum);
    MPI_Finalize();
    return 0;
}
EOF
  local out
  out=$("$1" -o "$work/ring" "$work/ring.c" 2>&1) || fail "$1: $out"
}

# ring_check RCS CASE...: each CASE's step (its "CASE RC" line in RCS, $work/CASE.out and
# .err) exited 0 with 4 ranks summing to 6; block.out has ranks 0 and 1 on the first node,
# cyclic.out ranks 0 and 2, where they are among the cases.
ring_check() {
  local rcs=$1 case r first
  shift
  for case in "$@"; do
    grep -qx "$case 0" <<< "$rcs" || fail "$case: srun failed: $rcs; $(cat "$work/$case.err")"
    [ "$(grep -c ' sum 6$' "$work/$case.out")" = 4 ] ||
      fail "$case: not 4 ranks summing to 6: $(cat "$work/$case.out" "$work/$case.err")"
    for r in 0 1 2 3; do
      grep -q "^rank $r of 4 " "$work/$case.out" || fail "$case: no rank $r: $(cat "$work/$case.out")"
    done
    [ "$case" = block ] || [ "$case" = cyclic ] || continue
    r=1
    [ "$case" = cyclic ] && r=2
    first=$(grep '^rank 0 ' "$work/$case.out" | awk '{print $6}')
    grep -q "^rank $r of 4 node $first " "$work/$case.out" || fail "$case layout: $(cat "$work/$case.out")"
  done
}

# ring_nobody MPI: as root, a job of nobody's runs srun --mpi=MPI on both nodes, and its
# ranks wire up through the root-run servers (skipped where nobody or setpriv is missing).
ring_nobody() {
  [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || return 0
  chmod 711 "$tmp" "$state" # the socket is 0666: let others through the directories
  mkdir -m 777 "$tmp/nobody" && cp "$work/ring" "$tmp/nobody/" && cd "$tmp/nobody" || exit 1
  local out n
  out=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$bin/gsched" sbatch \
    --parsable -N2 --ntasks-per-node=1 -t 1 -o "$tmp/nobody/out" \
    --wrap="srun --mpi=$1 ./ring; echo rc \$?" 2>&1) || fail "nobody's sbatch: $out"
  n=${out%%;*}
  wait_end "$n" 60 || fail "nobody's job: $(jq "$n" 'j'); $(cat "$tmp/nobody/out")"
  [ "$(grep -c ' sum 1$' "$tmp/nobody/out")" = 2 ] && grep -qx "rc 0" "$tmp/nobody/out" ||
    fail "nobody's ranks: $(cat "$tmp/nobody/out")"
}
