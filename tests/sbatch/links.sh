#!/bin/sh
# links.sh BIN SRC: deploy/install-slurm-links.sh makes the Slurm command links on request,
# gsched answers through them, and a file that is not gsched is never replaced.
set -u
bin=$(cd "$1" && pwd) || exit 1
src=$(cd "$2" && pwd) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "slurm_links: $*" >&2; exit 1; }

mkdir -p "$tmp/links"
echo '#!/bin/sh' > "$tmp/links/squeue" # someone's own squeue: must survive
PATH=$bin:$PATH "$src/deploy/install-slurm-links.sh" "$tmp/links" > "$tmp/out" 2>&1 ||
  fail "install-slurm-links.sh failed: $(cat "$tmp/out")"
grep -q 'squeue exists and is not gsched' "$tmp/out" || fail "no word about squeue: $(cat "$tmp/out")"
[ ! -L "$tmp/links/squeue" ] || fail "a foreign squeue was replaced"
for cmd in sbatch srun scancel sinfo scontrol sacct sstat seff sprio sshare sreport; do
  [ "$(readlink -f "$tmp/links/$cmd")" = "$(readlink -f "$bin/gsched")" ] || fail "$cmd is not linked to gsched"
done
# Through the link, gsched is scontrol.
out=$("$tmp/links/scontrol" show hostnames 'node[1-2]') || fail "scontrol through the link failed"
[ "$out" = "node1
node2" ] || fail "scontrol show hostnames through the link printed '$out'"
# Running it again replaces its own links and is quiet about them.
PATH=$bin:$PATH "$src/deploy/install-slurm-links.sh" "$tmp/links" > "$tmp/out2" 2>&1 || fail "second run failed"
[ "$(grep -c 'not gsched' "$tmp/out2")" = 1 ] || fail "second run: $(cat "$tmp/out2")"
echo "slurm_links: all checks passed"
