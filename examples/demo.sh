#!/usr/bin/env bash
# demo.sh BUILD_DIR: the main job of `make demo`. Until the scheduler lands it shows the built
# CLI and checks the example job file the way `gsched submit` will; later it starts a local
# cluster, submits examples/hello.toml and shows its output.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)

"$build/bin/gsched" --version
echo "--- gsched check examples/hello.toml"
"$build/bin/gsched" check "$here/hello.toml"
echo "--- a job file with mistakes is refused, every problem at its place:"
printf 'name = "typo"\n[resources]\ngpu_per_node = 4\n[run]\ncommand = ["true"]\n' \
  > "${TMPDIR:-/tmp}/gsched-demo-typo.toml"
"$build/bin/gsched" check "${TMPDIR:-/tmp}/gsched-demo-typo.toml" || true
rm -f "${TMPDIR:-/tmp}/gsched-demo-typo.toml"
