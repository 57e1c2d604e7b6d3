#!/usr/bin/env bash
# Installs the Debian 12 packages gsched needs to build, test and run; nothing else.
# Idempotent: when every package is present it only checks (one dpkg-query, well under 5 s);
# it runs apt-get update only when something is missing. CUDA, when present, comes from the
# machine's CUDA toolkit, not from here: the build works without it.
set -euo pipefail

packages=(
  build-essential    # gcc, make, libc headers; dpkg-dev (make deb: dpkg-shlibdeps)
  cmake              # >= 3.25 (Debian 12 ships 3.25.1)
  pkg-config
  python3            # the TOML conformance runner
  tzdata             # time zones: repeating reservations keep their local time (test_resv_recur)
  libuv1-dev         # event loops of gschedd and gsched-workerd
  libprotobuf-c-dev  # wire protocol runtime
  protobuf-c-compiler
  libhwloc-dev       # GPU/CPU/NUMA topology
  hwloc
  libsqlite3-dev     # scheduler state
  libmicrohttpd-dev  # gschedd's HTTP server: /metrics and /api/v1
  libncurses-dev     # gsched top's full-screen view
  tmux               # drives gsched top in its test
  chromium           # loads gschedd's status page in its test (headless)
  libssl-dev         # libcrypto: the cluster key's HMAC between the daemons
  libbpf-dev         # the workers' cgroup v2 device programs (GPU isolation)
  libacl1-dev        # POSIX ACLs: a cached dataset lets in every source's readers
  acl                # setfacl: tests/integration/data.sh gives a source readers by ACL
  libmunge-dev       # MUNGE credentials of CLIs on login nodes (scheduler.cli_port)
  munge              # munged, which makes and checks them (and tests/netns/login.sh runs)
  libcriterion-dev   # unit tests
  clang              # the libFuzzer build (make test-fuzz)
  libclang-rt-14-dev # libclang_rt.fuzzer, sanitizer runtimes: only a Recommends of clang-14
  libopenmpi-dev     # CPU all-reduce in the trainer; mpicc for tests/integration/pmix.sh
  libpmix-dev        # the workers' PMIx server: srun --mpi=pmix
  openmpi-bin
  mpich              # mpicc.mpich for tests/integration/pmi.sh (srun --mpi=pmi2); Open
  libmpich-dev       # MPI stays the default mpicc (alternatives: priority 50 over 40)
  libpmi2-0-dev      # Slurm's PMI-2 client library: pmi.sh's other peer
  iproute2           # gsched up --netns: namespaces, a bridge and veth pairs (ip)
  nftables           # packet loss on a link in tests/netns/loss.sh where the kernel has no netem
  python3-torch      # the PyTorch DDP client test (gloo) on a --netns cluster
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    echo "install-deps: not root; run as root or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
