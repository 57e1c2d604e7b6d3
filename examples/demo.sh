#!/usr/bin/env bash
# demo.sh BUILD_DIR: the main job of `make demo`. Until the scheduler lands it shows the built
# CLI and parses the example job file with gsched's TOML parser; later it starts a local
# cluster, submits examples/hello.toml and shows its output.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)

"$build/bin/gsched" --version
echo "--- examples/hello.toml as gsched's TOML parser reads it:"
"$build/bin/toml2json" < "$here/hello.toml"
echo
