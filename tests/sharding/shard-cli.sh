#!/usr/bin/env bash
# shard-cli.sh GSCHED: `gsched shard build|check|info` end to end on real files. The license
# texts under /usr/share/common-licenses become a byte-level dataset whose shards, read back
# past their headers in manifest order, must be exactly the files' bytes; `check` passes,
# then fails naming the one shard whose byte was flipped; raw token files with --raw; and
# bad options and bad input are refused, naming the option or file, without leaving
# anything behind.
set -u
gsched=$1
lic=/usr/share/common-licenses
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
  echo "shard-cli: $*" >&2
  failures=$((failures + 1))
}

# refuse STATUS REGEX ARGS...: gsched shard ARGS exits with STATUS, stderr matching REGEX.
refuse() {
  local status=$1 regex=$2 out rc
  shift 2
  out=$("$gsched" shard "$@" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq "$status" ] || fail "shard $*: exit $rc, expected $status: $out"
  echo "$out" | grep -qE -- "$regex" || fail "shard $*: expected /$regex/ in: $out"
}

files=()
for f in "$lic"/*; do
  [ -f "$f" ] && files+=("$f")
done
[ "${#files[@]}" -ge 3 ] || { echo "shard-cli: too few files in $lic" >&2; exit 1; }
total=$(cat "${files[@]}" | wc -c)

# --- a text dataset ---
ds=$tmp/text
if ! out=$("$gsched" shard build --out "$ds" --shard-tokens 40000 --val-fraction 0.1 \
  "${files[@]}" 2>&1); then
  echo "shard-cli: build failed: $out" >&2
  exit 1
fi
nlines=$(echo "$out" | grep -c '^shard=')
echo "$out" | grep -qE "^dataset=$ds shards=$nlines train_tokens=[0-9]+ val_tokens=[0-9]+ vocab=256$" ||
  fail "build summary: $out"

out=$("$gsched" shard check "$ds" 2>&1) || fail "check of a good dataset failed: $out"
echo "$out" | grep -q "bad=0" || fail "check: $out"

json=$("$gsched" shard info "$ds" --json) || fail "info --json failed"
python3 - "$ds" "$total" "$nlines" "$json" "${files[@]}" <<'EOF' || fail "info/contents check"
import json, sys
ds, total, nlines, j, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5:]
assert j["vocab"] == 256 and j["format"] == 1, j
assert j["train_tokens"] + j["val_tokens"] == total, (j, total)
assert j["val_tokens"] == int(0.1 * total), j
assert len(j["shards"]) == nlines, j
splits = [s["split"] for s in j["shards"]]
assert splits == sorted(splits, key=lambda s: s != "train") and "val" in splits, splits
for s in j["shards"]:
    assert 0 < s["tokens"] <= 40000 and s["dtype"] == "u8" and s["vocab"] == 256, s
stream = b"".join(open(f"{ds}/{s['file']}", "rb").read()[64:] for s in j["shards"])
assert stream == b"".join(open(f, "rb").read() for f in files), "shards hold the files' bytes"
EOF

out=$("$gsched" shard info "$ds") || fail "info failed"
echo "$out" | head -1 | grep -qE "^dataset=$ds format=1 vocab=256 shards=$nlines " || fail "info: $out"

# One flipped byte in the second train shard: check fails and names it, and only it.
victim=train-00001.bin
python3 -c '
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[64 + 1000] ^= 0x20
open(p, "wb").write(b)' "$ds/$victim"
out=$("$gsched" shard check "$ds" 2>"$tmp/err")
rc=$?
[ "$rc" -eq 1 ] || fail "check of a corrupt shard: exit $rc"
grep -q "$victim.*checksum mismatch" "$tmp/err" || fail "check names the shard: $(cat "$tmp/err")"
[ "$(grep -c . "$tmp/err")" -eq 1 ] || fail "only one shard is bad: $(cat "$tmp/err")"
echo "$out" | grep -q "^shard=$victim bad$" || fail "check output: $out"
echo "$out" | grep -q "bad=1" || fail "check output: $out"
# info reads headers only, so it still lists the dataset.
"$gsched" shard info "$ds" >/dev/null || fail "info of a dataset with a bad token area"

# A shard cut short is named by info and check alike.
truncate -s 100 "$ds/train-00000.bin"
refuse 1 "train-00000.bin: truncated" info "$ds"
refuse 1 "train-00000.bin: truncated" check "$ds"

# --- raw token ids ---
python3 -c '
import struct, sys
open(sys.argv[1], "wb").write(struct.pack("<3000H", *[(i * 7) % 1000 for i in range(3000)]))
open(sys.argv[2], "wb").write(struct.pack("<3H", 1, 1000, 2))' "$tmp/ids.u16" "$tmp/bad.u16"
out=$("$gsched" shard build --out "$tmp/raw" --raw u16 --vocab 1000 --val-tokens 500 \
  --shard-tokens 1000 "$tmp/ids.u16" 2>&1) || fail "raw build: $out"
echo "$out" | grep -q "train_tokens=2500 val_tokens=500 vocab=1000" || fail "raw build: $out"
echo "$out" | grep -q "^shard=train-00002.bin split=train tokens=500 dtype=u16 vocab=1000" ||
  fail "raw build shards: $out"
"$gsched" shard check "$tmp/raw" >/dev/null || fail "raw check"
refuse 1 "bad.u16: token 1 is id 1000, not below --vocab 1000" \
  build --out "$tmp/raw-bad" --raw u16 --vocab 1000 --val-tokens 0 "$tmp/bad.u16"
[ ! -e "$tmp/raw-bad" ] || fail "a failed build left $tmp/raw-bad behind"
refuse 1 "not a whole number of u32 tokens" \
  build --out "$tmp/raw-odd" --raw u32 --vocab 1000 "$tmp/bad.u16"

# --- bad usage names the option, bad input the file ---
f=${files[0]}
refuse 2 "where to\\? \\(--out DIR\\)" build "$f"
refuse 2 "which files" build --out "$tmp/x"
refuse 2 "--shard-tokens wants 2 or more, not 'abc'" build --out "$tmp/x" --shard-tokens abc "$f"
refuse 2 "--val-tokens and --val-fraction" build --out "$tmp/x" --val-tokens 5 \
  --val-fraction 0.1 "$f"
refuse 2 "--val-fraction wants a number in \\[0, 1\\), not '1.5'" build --out "$tmp/x" \
  --val-fraction 1.5 "$f"
refuse 2 "--raw is u8, u16 or u32, not 'u7'" build --out "$tmp/x" --raw u7 --vocab 9 "$f"
refuse 2 "--raw needs --vocab" build --out "$tmp/x" --raw u16 "$f"
refuse 2 "--vocab goes with --raw" build --out "$tmp/x" --vocab 300 "$f"
refuse 2 "--vocab 300 does not fit --raw u8" build --out "$tmp/x" --raw u8 --vocab 300 "$f"
refuse 2 "unknown option: '--bogus'" build --out "$tmp/x" --bogus "$f"
refuse 2 "unknown subcommand 'frobnicate'" frobnicate
refuse 2 "which dataset" check
refuse 2 "unknown option '--json'" check "$ds" --json
refuse 1 "no-such-file: No such file" build --out "$tmp/x" "$tmp/no-such-file"
refuse 1 "leaves no train tokens" build --out "$tmp/x" --val-tokens "$total" "${files[@]}"
[ ! -e "$tmp/x" ] || fail "refused builds created $tmp/x"
refuse 1 "already holds a dataset" build --out "$tmp/raw" --raw u16 --vocab 1000 "$tmp/ids.u16"
refuse 1 "manifest.toml: cannot open" check "$tmp"

if [ "$failures" -gt 0 ]; then
  echo "shard-cli: $failures failure(s)" >&2
  exit 1
fi
echo "shard-cli: ok"
