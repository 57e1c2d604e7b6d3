#!/usr/bin/env bash
# check-deb-install.sh DEB_DIR [NAME]: make deb's package (the gsched_*.deb that check-deb.sh
# left in DEB_DIR) installed, used, upgraded, removed and purged for real, with its
# maintainer scripts running as on a host, but in a throwaway copy of this machine: an
# overlay of / whose changes go to a tmpfs, in mount, PID and network namespaces of its own,
# so that the host's packages, users, /etc and ports are untouched and every process the
# test started dies with it. Root only (mounts and namespaces); else it exits 77, which
# ctest counts as skipped.
#
# It follows docs/cluster.md for a one-host cluster: apt installs the package, the cluster
# key is made, gschedd and the worker are started as their installed systemd units say
# (systemd does not run here: ExecStart looked up on systemd's path, User, Group,
# RuntimeDirectory and StateDirectory done by hand, after `systemd-analyze verify`), a user's
# batch job runs as that user, a reinstall keeps an edited configuration, removal stops the
# daemons (through systemctl, here a stand-in that stops the emulated units) and purge
# removes the configuration but never the key, the state or the user.
set -u
name=${2:-package_install}
units=/usr/lib/systemd/system
say() { echo "$name: $*"; }
# Inside the copy a failure shows the daemons' last lines.
fail() {
  echo "$name: $*" >&2
  [ "${GSCHED_PKG_STAGE:-}" = chroot ] || exit 1
  for f in /var/log/gsched-*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -25 "$f" >&2; }
  done
  exit 1
}

# wait_for WHAT SECONDS COMMAND...: retries COMMAND until it succeeds or SECONDS pass.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@" > /dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $what"
    sleep 0.1
  done
}

unit_key() { sed -n "s/^$2=//p" "$units/$1" | tail -1; }

# unit_start UNIT: what systemd 252 (Debian 12's) would do for the installed unit, by hand:
# its state and runtime directories made and given to its user, its LoadCredential files
# copied into its credentials directory (mode 0400, the user's), its ExecStart program looked
# up where systemd looks, ${CREDENTIALS_DIRECTORY} in its arguments replaced, the program
# started as User:Group in the background; its pid kept for unit_stop.
unit_start() {
  local unit=$1 user group cmd prog d cred creds=/run/credentials/$1
  user=$(unit_key "$unit" User) group=$(unit_key "$unit" Group)
  user=${user:-root} group=${group:-root}
  read -r -a cmd <<< "$(unit_key "$unit" ExecStart)"
  cmd=("${cmd[@]//'${CREDENTIALS_DIRECTORY}'/$creds}")
  for cred in $(sed -n 's/^LoadCredential=//p' "$units/$unit"); do
    install -d -m 0500 -o "$user" "$creds" &&
      install -m 0400 -o "$user" -g "$group" "${cred#*:}" "$creds/${cred%%:*}" ||
      fail "$unit: LoadCredential=$cred"
  done
  prog=$(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin command -v "${cmd[0]}") ||
    fail "$unit: ExecStart=${cmd[*]}: ${cmd[0]} is not on systemd's path"
  for d in $(unit_key "$unit" StateDirectory); do
    install -d -m 0755 -o "$user" -g "$group" "/var/lib/$d" || fail "$unit: /var/lib/$d"
  done
  for d in $(unit_key "$unit" RuntimeDirectory); do
    install -d -m "$(unit_key "$unit" RuntimeDirectoryMode)" -o "$user" -g "$group" "/run/$d" ||
      fail "$unit: /run/$d"
  done
  CREDENTIALS_DIRECTORY=$creds \
    setsid setpriv --reuid="$user" --regid="$group" --init-groups -- "$prog" "${cmd[@]:1}" \
    > "/var/log/gsched-$unit.log" 2>&1 &
  echo $! > "/run/$unit.pid"
}

# unit_stop UNIT: systemd's stop with KillMode=process: SIGTERM to the main process, SIGKILL
# after TimeoutStopSec.
unit_stop() {
  local pid deadline
  pid=$(cat "/run/$1.pid" 2> /dev/null) || return 0
  deadline=$((SECONDS + $(unit_key "$1" TimeoutStopSec | tr -dc 0-9)))
  kill -TERM "$pid" 2> /dev/null
  while kill -0 "$pid" 2> /dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  kill -KILL "$pid" 2> /dev/null
  rm -f "/run/$1.pid"
}
running() { kill -0 "$(cat "/run/$1.pid" 2> /dev/null)" 2> /dev/null; }

skip() {
  echo "[SKIP] $name: $*"
  exit 77
}

case ${GSCHED_PKG_STAGE:-outer} in
outer)
  deb=$(ls "$1"/gsched_*.deb 2> /dev/null | head -1)
  [ -n "$deb" ] || fail "no gsched_*.deb in $1 (package_deb makes it)"
  [ "$(id -u)" = 0 ] || skip "not root: the overlay of / and the namespaces need CAP_SYS_ADMIN"
  for d in /usr /etc /var; do # the overlay covers the root filesystem only
    [ "$(stat -c %d "$d")" = "$(stat -c %d /)" ] || skip "$d is a mount of its own"
  done
  if dpkg-query -W -f '${Status}' gsched 2> /dev/null | grep -q ' installed$'; then
    skip "this host has the gsched package installed"
  fi
  p=$(PATH=/usr/local/sbin:/usr/local/bin command -v gschedd) &&
    skip "$p (cmake --install) would be the units' program, not the package's"
  layer=$(mktemp -d) || exit 1
  tag=${layer##*/}
  # The jobs' cgroups are the host's (/sys is shared): under gsched-test/TAG, removed after.
  GSCHED_PKG_STAGE=namespace GSCHED_PKG_DEB=$deb GSCHED_PKG_TAG=$tag GSCHED_PKG_LAYER=$layer \
    unshare --mount --pid --net --fork --propagation private "$0" "$1" "$name"
  rc=$?
  rmdir "$layer"
  for h in /sys/fs/cgroup/*/gsched-test/$tag /sys/fs/cgroup/gsched-test/$tag; do
    [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} + 2> /dev/null
  done
  exit $rc
  ;;

namespace)
  # PID 1 of the new namespace: when it exits, every process in it is killed.
  layer=$GSCHED_PKG_LAYER
  mount -t tmpfs -o mode=0755 gsched-pkg "$layer" || fail "tmpfs on $layer"
  mkdir "$layer/upper" "$layer/work" "$layer/root"
  root=$layer/root
  if ! out=$(mount -t overlay overlay \
    -o "lowerdir=/,upperdir=$layer/upper,workdir=$layer/work" "$root" 2>&1); then
    skip "no overlay of / here: $out"
  fi
  mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" &&
    mount --rbind /sys "$root/sys" && mount -t tmpfs -o mode=0755 run "$root/run" &&
    mount -t tmpfs -o mode=1777 tmp "$root/tmp" || fail "mounts in the copy failed"
  ip link set lo up || fail "no loopback in the test's network namespace"
  mkdir -p "$root/var/tmp/gsched-pkg"
  cp "$GSCHED_PKG_DEB" "$0" "$root/var/tmp/gsched-pkg/" || fail "copy into the overlay"
  GSCHED_PKG_STAGE=chroot GSCHED_PKG_DEB=/var/tmp/gsched-pkg/${GSCHED_PKG_DEB##*/} \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    chroot "$root" /bin/bash "/var/tmp/gsched-pkg/${0##*/}" "$1" "$name"
  exit $?
  ;;
chroot) ;;
stop) # the systemctl stand-in's "stop UNIT..." (below)
  for u; do unit_stop "$u"; done
  exit 0
  ;;
*) fail "GSCHED_PKG_STAGE=$GSCHED_PKG_STAGE" ;;
esac

# --- inside the copy, as root ---
deb=$GSCHED_PKG_DEB
cd /var/tmp/gsched-pkg || fail "no /var/tmp/gsched-pkg"
export DEBIAN_FRONTEND=noninteractive

as_user() { runuser -u gsuser -- env -C /home/gsuser "$@"; }
job_state() { as_user gsched sacct -j "$1" -X -n -P --format State; }
job_is() { [ "$(job_state "$1")" = "$2" ]; }

# 1. apt installs the package (what it depends on is here already: the build needed it).
out=$(apt-get install -y "./${deb##*/}" 2>&1) || fail "apt-get install: $out"
dpkg-query -W -f '${Status}' gsched | grep -q 'install ok installed' ||
  fail "not installed: $(dpkg-query -W -f '${Status}' gsched)"
IFS=: read -r _ _ uid _ _ home shell <<< "$(getent passwd gsched)"
[ -n "$uid" ] && [ "$uid" -lt 1000 ] || fail "postinst made no system user gsched: uid '$uid'"
[ "$home" = /var/lib/gsched ] && [ "$shell" = /usr/sbin/nologin ] ||
  fail "the gsched user: home $home, shell $shell"
getent group gsched > /dev/null || fail "no group gsched"
cmp -s /etc/gsched/gsched.toml /usr/share/gsched/examples/gsched.toml ||
  fail "/etc/gsched/gsched.toml is not the example configuration"
gsched --version > /dev/null || fail "the installed gsched does not run"
if command -v systemd-analyze > /dev/null; then
  out=$(systemd-analyze verify "$units/gschedd.service" "$units/gsched-workerd.service" 2>&1) ||
    fail "systemd-analyze verify: $out"
fi
say "installed; postinst made user gsched (uid $uid) and /etc/gsched/gsched.toml"

# 2. The cluster key and the configuration, as docs/cluster.md says; the daemons started.
(umask 077 && head -c 32 /dev/urandom > /etc/gsched/gsched.key) || fail "key"
sed -i "s|^cgroup_parent = \"gsched\"|cgroup_parent = \"gsched-test/$GSCHED_PKG_TAG\"|" \
  /etc/gsched/gsched.toml
grep -q "^cgroup_parent = \"gsched-test/" /etc/gsched/gsched.toml ||
  fail "the example configuration has no cgroup_parent line to change"
unit_start gschedd.service
wait_for "gschedd's socket" 30 test -S /run/gsched/gschedd.sock
unit_start gsched-workerd.service
wait_for "the node to be idle" 60 sh -c 'gsched sinfo -h -o %t | grep -qx idle'
running gschedd.service || fail "gschedd is not running"
stat -c %U /var/lib/gsched | grep -qx gsched || fail "/var/lib/gsched is not gsched's"
say "gschedd (as gsched) and the worker are up; the node is idle"

# 3. A user's batch job runs as that user, in the directory it was submitted from.
useradd -m -s /bin/bash gsuser || fail "useradd gsuser"
id=$(as_user gsched sbatch --parsable --wrap 'id -un; pwd' 2>&1) || fail "sbatch: $id"
id=${id%%;*}
wait_for "job $id to complete" 60 job_is "$id" COMPLETED
out=$(cat "/home/gsuser/slurm-$id.out" 2> /dev/null)
[ "$out" = "$(printf 'gsuser\n/home/gsuser')" ] || fail "job $id's output: '$out'"
[ "$(stat -c %U "/home/gsuser/slurm-$id.out")" = gsuser ] || fail "the output is not gsuser's"
long=$(as_user gsched sbatch --parsable --wrap 'exec sleep 300' 2>&1) || fail "sbatch: $long"
long=${long%%;*}
wait_for "job $long to run" 60 job_is "$long" RUNNING
wait_for "job $long's task" 30 pgrep -u gsuser -x sleep
say "job $id ran as gsuser; job $long is running"

# 4. A reinstall (an upgrade to the same version) keeps the edited configuration and user.
echo '# edited by the operator' >> /etc/gsched/gsched.toml
out=$(dpkg -i "$deb" 2>&1) || fail "dpkg -i again: $out"
grep -q '^# edited by the operator$' /etc/gsched/gsched.toml || fail "the reinstall replaced the configuration"
[ "$(id -u gsched)" = "$uid" ] || fail "the reinstall changed gsched's uid"
say "reinstalled; the edited configuration is kept"

# 5. Removal on a systemd host: prerm stops both daemons, which ends the running job's task.
# systemctl is a stand-in that logs its calls and stops the emulated units (in place of the
# copy's /usr/bin/systemctl: apt runs maintainer scripts with a PATH of its own).
mkdir -p /run/systemd/system
systemctl=$(command -v systemctl) || systemctl=/usr/bin/systemctl
cat > "$systemctl" << EOF
#!/bin/bash
echo "\$*" >> /run/systemctl.calls
[ "\$1" = stop ] || exit 0
shift
GSCHED_PKG_STAGE=stop exec /var/tmp/gsched-pkg/${0##*/} "\$@"
EOF
chmod 0755 "$systemctl"
out=$(apt-get remove -y gsched 2>&1) || fail "apt-get remove: $out"
grep -qx 'stop gschedd.service gsched-workerd.service' /run/systemctl.calls ||
  fail "prerm did not stop the daemons; systemctl calls: $(cat /run/systemctl.calls)"
grep -qx 'daemon-reload' /run/systemctl.calls || fail "postrm did not reload systemd's units"
running gschedd.service && fail "gschedd still runs after the removal"
running gsched-workerd.service && fail "the worker still runs after the removal"
wait_for "job $long's task to end" 30 sh -c '! pgrep -u gsuser -x sleep'
for f in /usr/sbin/gschedd /usr/sbin/gsched-workerd /usr/bin/gsched "$units/gschedd.service"; do
  [ -e "$f" ] && fail "$f is still there after the removal"
done
[ -f /etc/gsched/gsched.toml ] || fail "the removal (not a purge) took the configuration"
ls /var/lib/gsched/*.db > /dev/null 2>&1 || fail "the removal took the scheduler's state"
say "removed: daemons stopped, job $long's task ended, configuration and state kept"

# 6. Purge: the configuration goes; the key, the state and the user stay.
out=$(dpkg --purge gsched 2>&1) || fail "dpkg --purge: $out"
[ -e /etc/gsched/gsched.toml ] && fail "the purge left /etc/gsched/gsched.toml"
[ -f /etc/gsched/gsched.key ] || fail "the purge took the cluster key"
ls /var/lib/gsched/*.db > /dev/null 2>&1 || fail "the purge took the scheduler's state"
getent passwd gsched > /dev/null || fail "the purge took the gsched user"
dpkg-query -W -f '${Status}' gsched 2> /dev/null | grep -q ' installed$' && fail "still installed"
say "purged: configuration gone; key, state and user kept"
# A sanitizer build's package reports into the daemons' logs: those count too.
if grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' /var/log/gsched-*.log; then
  fail "sanitizer report in a daemon's log"
fi
say ok
