#!/usr/bin/env bash
# demo.sh BUILD_DIR: the main job of `make demo`. In a temporary directory: starts a local
# cluster with `gsched up` (gschedd and two workers), builds training shards from text
# already on the machine (the licence texts), submits examples/train-ddp.toml (a 2-node x
# 1-rank data-parallel gsched-train job whose ranks mpirun starts through the workers),
# follows its progress from `gsched show` with a progress bar, then prints the final eval
# loss (with `gsched top --once`, the cluster view, shown once while it trains), a text sample from the last checkpoint and where loss.svg is (copied to
# BUILD_DIR/demo/), and stops the cluster.
# GSCHED_DEMO_STEPS shortens the run (the ctest `demo` does); GSCHED_DEMO_KEEP=1 keeps the
# directory. Under 3 minutes on 2 cores.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
gsched="$build/bin/gsched"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-demo.XXXXXX")
cleanup() {
  "$gsched" down --state "$tmp/state" >/dev/null 2>&1 || true
  if [ "${GSCHED_DEMO_KEEP:-0}" = 1 ]; then echo "demo: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
cd "$tmp"
export GSCHED_SOCKET="$tmp/state/gschedd.sock"
export PATH="$build/bin:$PATH" # the job's environment is submit's: gsched-train is found there
# A local cluster is this one machine: the ranks and Open MPI's daemons talk over loopback,
# not over interfaces that may come and go meanwhile (a test suite's network namespaces).
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo

"$gsched" --version
echo "--- gsched up --workers 2"
"$gsched" up --workers 2 --gpus-per-node 0 --state "$tmp/state"
"$gsched" nodes

echo "--- gsched shard build: bytes of the licence texts, 5% held out for eval"
"$gsched" shard build --out data --val-fraction 0.05 /usr/share/common-licenses/* | tail -1

mkdir examples
cp "$here/train-ddp.toml" "$here/train-tiny.toml" examples/
if [ -n "${GSCHED_DEMO_STEPS:-}" ]; then
  sed -i "s/^steps = .*/steps = $GSCHED_DEMO_STEPS/" examples/train-tiny.toml
fi
echo "--- a job file with a mistake is refused, the problem at its place:"
sed 's/^launcher = "mpi"/launcher = "mpich"/' examples/train-ddp.toml > examples/typo.toml
"$gsched" submit examples/typo.toml || true

echo "--- gsched submit examples/train-ddp.toml (2 nodes x 1 rank, launcher = \"mpi\")"
id=$("$gsched" submit --parsable examples/train-ddp.toml)
"$gsched" wait --start "$id" >/dev/null
"$gsched" queue

# The Progress line of `gsched show`, as a bar: redrawn in place on a terminal, else a line
# every tenth of the run.
bar() { # bar STEP STEPS REST
  local step=$1 steps=$2 width=30 fill
  fill=$((steps > 0 ? step * width / steps : 0))
  printf '[%s%s] %s' "$(printf '%*s' "$fill" '' | tr ' ' '#')" \
    "$(printf '%*s' $((width - fill)) '' | tr ' ' '.')" "$3"
}
shown=-1
topped=0
while :; do
  view=$("$gsched" show "$id")
  state=$(sed -n 's/^   State=\([A-Z_]*\).*/\1/p' <<< "$view")
  line=$(sed -n 's/^Progress: //p' <<< "$view")
  re='^step ([0-9]+)/([0-9]+) \(([0-9]+)%\) loss ([0-9.]+).* tokens/s ([0-9]+).*overlap ([0-9.]+)'
  if [[ $line =~ $re ]] && [ "$topped" = 0 ]; then
    topped=1
    echo "--- gsched top --once: the cluster while the job runs (CPU nodes: no GPU rows)"
    "$gsched" top --once
  fi
  if [[ $line =~ $re ]]; then
    step=${BASH_REMATCH[1]} steps=${BASH_REMATCH[2]}
    text="step $step/$steps  loss ${BASH_REMATCH[4]}  tokens/s ${BASH_REMATCH[5]}  overlap ${BASH_REMATCH[6]}"
    if [ -t 1 ]; then
      printf '\r%s   ' "$(bar "$step" "$steps" "$text")"
    elif [ $((step * 10 / steps)) -gt "$shown" ]; then
      shown=$((step * 10 / steps))
      bar "$step" "$steps" "$text"
      echo
    fi
  fi
  case $state in PENDING | RUNNING | REQUEUED | "") ;; *) break ;; esac
  sleep 0.5
done
[ -t 1 ] && echo
"$gsched" wait "$id" || { tail -20 "train-ddp-$id.out"; exit 1; }

echo "--- gsched show $id"
"$gsched" show "$id"
echo "--- the run's own log (gsched logs $id), its last lines"
"$gsched" logs "$id" | tail -4
final=$(sed -n 's/^done: .*eval loss \([0-9.]*\).*/\1/p' "train-ddp-$id.out")
ckpt=$(sed -n 's/^checkpoint: //p' "train-ddp-$id.out" | tail -1)
echo "final eval loss: $final (bytes: ln 256 = 5.55 knows nothing)"
echo "--- gsched-train sample $ckpt --prompt 'The licensee'"
gsched-train sample "$ckpt" --prompt "The licensee" --tokens 160 --seed 7
echo
[ -s run-ddp/loss.svg ] || { echo "demo: no loss.svg"; exit 1; }
mkdir -p "$build/demo" # kept after the cluster's directory goes
cp run-ddp/loss.svg run-ddp/metrics.jsonl "$build/demo/"
echo "loss curve: $build/demo/loss.svg (per-step metrics beside it: metrics.jsonl)"
echo "--- gsched down"
"$gsched" down --state "$tmp/state"
echo "demo: done"
