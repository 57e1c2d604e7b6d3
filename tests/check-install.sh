#!/usr/bin/env bash
# check-install.sh BUILD_DIR DEST: cmake --install into a scratch prefix, then runs the
# installed gsched to show the installed tree works on its own.
set -eu
build=$1
dest=$2
rm -rf "$dest"
cmake --install "$build" --prefix "$dest"
"$dest/bin/gsched" --version
test -x "$dest/bin/toml2json"
"$dest/sbin/gschedd" --version
"$dest/sbin/gsched-workerd" --version
test -f "$dest/lib/systemd/system/gschedd.service"
test -f "$dest/lib/systemd/system/gsched-workerd.service"
# The status page, where an installed gschedd looks for it (scheduler/sched_web.c).
for f in index.html app.js style.css; do test -f "$dest/share/gsched/web/$f"; done
rm -rf "$dest"
