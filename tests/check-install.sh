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
test -f "$dest/share/gsched/systemd/gschedd.service"
rm -rf "$dest"
