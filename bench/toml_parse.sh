#!/usr/bin/env bash
# toml_parse.sh [BUILD_DIR] [SIZE_KB]: TOML parse throughput of gsched's parser against
# Python's tomllib on the same generated document, measured in the same run (ratio), plus
# callgrind's instruction count per input byte for one parse (repeatable on a noisy machine).
set -euo pipefail
build=${1:-build}
size_kb=${2:-1024}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 "$here/gen_toml.py" "$size_kb" > "$tmp/doc.toml"
bytes=$(stat -c %s "$tmp/doc.toml")

gs_line=$("$build/bin/toml_bench" "$tmp/doc.toml" 20)
gs_mbps=$(sed -n 's/.*mb_per_s=\([0-9.]*\).*/\1/p' <<< "$gs_line")

py_mbps=$(python3 - "$tmp/doc.toml" <<'PY'
import sys, time, tomllib
data = open(sys.argv[1], "rb").read().decode()
n = 3
t = time.perf_counter()
for _ in range(n):
    tomllib.loads(data)
print("%.2f" % (len(data.encode()) * n / (time.perf_counter() - t) / 1e6))
PY
)

echo "document: ${bytes} bytes (bench/gen_toml.py ${size_kb})"
echo "gsched gs_toml_parse: ${gs_mbps} MB/s"
echo "python3 tomllib:      ${py_mbps} MB/s"
awk -v a="$gs_mbps" -v b="$py_mbps" 'BEGIN { printf "ratio gsched/tomllib: %.1fx\n", a / b }'

if command -v valgrind >/dev/null; then
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
    "$build/bin/toml_bench" "$tmp/doc.toml" 1 > /dev/null 2> "$tmp/cg.log"
  ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg.log")
  awk -v ir="$ir" -v n="$bytes" 'BEGIN { printf "callgrind: %d instructions, %.1f per byte (incl. file read)\n", ir, ir / n }'
fi
