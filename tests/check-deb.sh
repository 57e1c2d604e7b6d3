#!/usr/bin/env bash
# check-deb.sh BUILD_DIR [KEEP_DIR]: `make deb`'s package made from BUILD_DIR (cpack -G DEB) and looked
# at without installing it: its control fields (name, Depends from dpkg-shlibdeps naming the
# Debian libraries gsched links), its files under /usr (programs, units where systemd finds
# them, the status page, the example configuration), its maintainer scripts (they parse, and
# postinst makes the gsched user and /etc/gsched), and the unpacked programs running. With
# KEEP_DIR the package is left there, for check-deb-install.sh (ctest package_install).
set -u
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() {
  echo "check-deb: $*" >&2
  exit 1
}

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out" > "$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log"; fail "cpack failed"; }
deb=$(ls "$out"/gsched_*.deb 2> /dev/null | head -1)
[ -n "$deb" ] || fail "no gsched_*.deb in $(ls "$out")"
info=$(dpkg-deb --field "$deb" Package Version Architecture Depends Section)
grep -q '^Package: gsched$' <<< "$info" || fail "control: $info"
grep -q "^Architecture: $(dpkg --print-architecture)$" <<< "$info" || fail "control: $info"
for lib in libuv1 libsqlite3-0 libprotobuf-c1 libssl3 passwd; do
  grep -q "^Depends:.*\b$lib\b" <<< "$info" || fail "Depends lacks $lib: $info"
done
contents=$(dpkg-deb --contents "$deb" | awk '{print $NF}')
for f in ./usr/bin/gsched ./usr/bin/gsched-train ./usr/sbin/gschedd ./usr/sbin/gsched-workerd \
  ./usr/lib/systemd/system/gschedd.service ./usr/lib/systemd/system/gsched-workerd.service \
  ./usr/share/gsched/web/index.html ./usr/share/gsched/examples/gsched.toml; do
  grep -qx -- "$f" <<< "$contents" || fail "the package lacks $f"
done
if grep -q '^\./usr/local/' <<< "$contents"; then fail "files under /usr/local"; fi

dpkg-deb --control "$deb" "$out/control"
for s in postinst prerm postrm; do
  [ -x "$out/control/$s" ] || fail "no executable $s"
  sh -n "$out/control/$s" || fail "$s does not parse"
done
grep -q 'useradd --system' "$out/control/postinst" || fail "postinst makes no gsched user"

dpkg-deb --extract "$deb" "$out/root"
"$out/root/usr/bin/gsched" --version > /dev/null || fail "the packaged gsched does not run"
"$out/root/usr/sbin/gschedd" --version > /dev/null || fail "the packaged gschedd does not run"
"$out/root/usr/sbin/gsched-workerd" --version > /dev/null || fail "the packaged worker does not run"
grep -q '^ExecStart=gschedd ' "$out/root/usr/lib/systemd/system/gschedd.service" ||
  fail "gschedd.service: $(grep ExecStart "$out/root/usr/lib/systemd/system/gschedd.service")"
if [ $# -ge 2 ]; then
  mkdir -p "$2" && rm -f "$2"/gsched_*.deb && cp "$deb" "$2/" || fail "cannot keep it in $2"
fi
echo "check-deb: $(basename "$deb") ok ($(du -h "$deb" | cut -f1))"
