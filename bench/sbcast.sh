#!/usr/bin/env bash
# sbcast.sh [BUILD_DIR] [MIB] [ROUNDS]: how long sbcast takes to put a file of MIB MiB
# (default 256) on every node of a job, on a local cluster of two workers, against the
# baselines measured in the same job: an srun step of one task per node that copies it with
# cp (what a script does without sbcast, each node reading the source itself), and the same
# with the copy synced to disk after (sbcast syncs each node's copy before renaming it into
# place). ROUNDS (default 5) of each, alternated; prints each way's median wall time, its rate (MiB/s of
# file per node) and the ratio of the medians. The workers share this machine, so both ways
# read and write the same disk (its page cache, for a file that fits) and sbcast's TCP runs
# on loopback: the figures say what sbcast's own path costs, not what it saves a real
# cluster's shared filesystem.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
mib=${2:-256}
rounds=${3:-5}
bin="$build/bin"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-bench.XXXXXX")
cleanup() { "$bin/gsched" down --state "$tmp/state" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp"
"$bin/gsched" up --workers 2 --gpus-per-node 0 --state "$tmp/state" >/dev/null
export GSCHED_SOCKET=$tmp/state/gschedd.sock
head -c $((mib << 20)) /dev/urandom > src.bin
mkdir -p "$tmp/bin"
for c in srun sbatch sbcast; do ln -sf "$bin/gsched" "$tmp/bin/$c"; done
export PATH=$tmp/bin:$PATH
cat > run.sh <<EOF
#!/bin/bash
cd $tmp
ms() { date +%s%3N; }
for i in \$(seq $rounds); do
  t=\$(ms); sbcast -f src.bin dest.sbcast || echo "sbcast failed" >> fail.log
  echo "sbcast \$((\$(ms) - t))" >> times
  t=\$(ms); srun --overlap --ntasks-per-node=1 sh -c 'cp src.bin dest.cp.\$SLURMD_NODENAME' ||
    echo "cp failed" >> fail.log
  echo "cp \$((\$(ms) - t))" >> times
  t=\$(ms); srun --overlap --ntasks-per-node=1 sh -c 'cp src.bin dest.sync.\$SLURMD_NODENAME && sync dest.sync.\$SLURMD_NODENAME' ||
    echo "cp+sync failed" >> fail.log
  echo "sync \$((\$(ms) - t))" >> times
  cmp -s src.bin dest.sbcast || echo "sbcast copy differs" >> fail.log
  rm -f dest.sbcast dest.cp.* dest.sync.*
done
EOF
out=$("$bin/gsched" sbatch --parsable -N2 -t 30 -o "$tmp/job.out" run.sh)
id=${out%%;*}
"$bin/gsched" wait "$id" --timeout 1800s >/dev/null || { cat "$tmp/job.out" >&2; exit 1; }
[ ! -s fail.log ] || { echo "sbcast bench: runs failed:" >&2; cat fail.log job.out >&2; exit 1; }
echo "sbcast: $mib MiB to 2 workers, $rounds rounds each, $(nproc) cores"
med() { awk -v k="$1" '$1 == k { print $2 }' times | sort -n |
  awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
sm=$(med sbcast) cm=$(med cp) ym=$(med sync)
awk -v m="$mib" -v s="$sm" -v c="$cm" -v y="$ym" 'BEGIN {
  printf "sbcast:          median %d ms, %.0f MiB/s per node\n", s, m * 1000 / s
  printf "srun cp:         median %d ms, %.0f MiB/s per node\n", c, m * 1000 / c
  printf "srun cp + sync:  median %d ms, %.0f MiB/s per node\n", y, m * 1000 / y
  printf "ratio (sbcast / srun cp): %.2fx; (sbcast / srun cp + sync): %.2fx\n", s / c, s / y }'
