#!/usr/bin/env bash
# docs.sh BIN_DIR SRC_DIR: the runnable examples of docs/*.md, run verbatim as a new user
# would type them (issue 20; the README's commands are readme.sh's). The convention, which
# docs/README.md states for writers:
#
# - A runnable example is an indented code block (4 spaces, outside any ``` fence) whose
#   first line starts with `$ `. Each `$ ` line is a command, continued on the next line
#   while it ends with `\`; the lines after it, up to the next `$ ` line or the end of the
#   block (a blank line), are the output it shows (stdout and stderr together, in order).
# - `<!-- not run: REASON -->` as the last non-blank line before such a block keeps it
#   out; the test prints the reason.
# - `$ exit` ends a shell the block's first command started (salloc without a command):
#   the commands between are typed into it (fed to its standard input, SHELL=/bin/bash),
#   and the outputs shown for all of them are expected, in order, from the first command.
# - A command is expected to exit 0, unless its shown output has `error:` in it: then it
#   must exit non-zero.
#
# Each block runs in a fresh directory that looks like the checkout (a link to each of its
# top-level entries: examples/, tests/topologies/, ...), with gsched and the Slurm names
# (deploy/install-slurm-links.sh) first on PATH, as root, each command in a bash of its
# own (no variables carry over) with stdin from /dev/null, on a fresh local cluster of the
# README's `gsched up --workers 2 --gpus-per-node 4` in ./.gsched (so job ids start at 1 in
# every block), stopped after it. A block whose first command is `gsched up` starts its
# own. A block that needs network namespaces (`--netns`) is skipped, saying so, where they
# cannot be made.
#
# Output comparison, line by line, the real output's trailing spaces and trailing blank
# lines dropped; in a shown line:
#   - `...` alone on a line matches any number of lines (none too); within a line, any text
#     (the spaces around it included);
#   - a run of spaces matches any run of spaces (columns widen with their values);
#   - a date and time 2026-12-05T10:00[:00] matches any; a duration or time of day
#     [D-]HH:MM:SS matches any;
#   - a size, digits followed by K, M, G or T (MaxRSS's 7M, 64492K) matches any;
#   - an IPv4 address, with or without :PORT, matches any.
# Everything else, job ids and node names included, must be as shown.
#
# Examples not run, and why (written as plain blocks, not `$ ` ones): deployment steps for
# real hosts (cluster.md, security.md: useradd, systemctl, /etc/gsched/gsched.key), scripts
# and job files that are not commands (slurm.md's batch scripts, job-file.md's TOML and its
# kv snippet, which runs inside a job), the trainer's commands (trainer.md: a 1000-step run,
# minutes on 2 cores; tests/trainer runs the trainer), the simulator's (simulator.md: a
# BUILD/ path and the traces beside the checkout; tests/sim/simulate.sh runs its fixture),
# and output fragments without their commands (job-file.md's errors, data.md's show lines).
set -u
bin=$(cd "$1" && pwd) || exit 1
src=$(cd "$2" && pwd) || exit 1
tmp=$(mktemp -d)
py=$(python3 -c 'import sys; print(sys.executable)') || exit 1

cleanup() {
  local d f
  for d in "$tmp"/run/*/; do
    [ -d "$d/.gsched" ] || continue
    (cd "$d" && "$bin/gsched" down > /dev/null 2>&1)
    for f in "$d"/.gsched/*.pid; do
      [ -f "$f" ] && kill_if "$(cat "$f")" gschedd gsched-workerd
    done
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# kill_if PID PROGRAM...: kill -9 PID if it is still one of the programs (pids are reused).
kill_if() {
  local p=$1 comm prog
  shift
  comm=$(cat /proc/"$p"/comm 2> /dev/null) || return 0
  for prog in "$@"; do
    [ "$comm" = "$prog" ] && kill -9 "$p" 2> /dev/null
  done
  return 0
}

failures=0
# fail_block WHERE MESSAGE [quiet]: reports a failed block, with its cluster's logs unless
# quiet (an output that differs needs none); the test goes on with the next block.
fail_block() {
  printf 'docs: %s: %b\n' "$1" "$2" >&2
  local f
  for f in "$dir"/.gsched/*.log; do
    [ -f "$f" ] && [ -z "${3:-}" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }
  done
  failures=$((failures + 1))
}

if [ "$(id -u)" != 0 ]; then
  echo "[SKIP] integration::docs: not root: the examples are root's (reservations need root)"
  exit 77
fi
netns_ok=1
ip netns list > /dev/null 2>&1 || netns_ok=0

unset GSCHED_SOCKET GSCHED_SERVER GSCHED_SUBMIT_KEY
for v in "${!SLURM_@}" "${!GSCHED_JOB@}"; do unset "$v"; done
export SHELL=/bin/bash
export PATH="$tmp/slurm-bin:$bin:$PATH"
"$src/deploy/install-slurm-links.sh" "$tmp/slurm-bin" > /dev/null || exit 1

# extract DOC OUT: one directory per runnable block, OUT/NNN/: `where` (DOC:LINE), `skip`
# (the reason, when not run), and per command K: cmd.K, its stdin.K (only for a shell's
# first command) and the output it shows, exp.K.
extract() {
  "$py" - "$1" "$2" << 'EOF'
import os, re, sys
doc, out = sys.argv[1], sys.argv[2]
lines = open(doc, encoding="utf-8").read().split("\n")
blocks, fence, i = [], False, 0
while i < len(lines):
    line = lines[i]
    if line.lstrip().startswith("```"):
        fence = not fence
    elif not fence and line.startswith("    $ ") and (i == 0 or not lines[i - 1].strip()):
        j = i
        while j < len(lines) and lines[j].startswith("    ") and lines[j].strip():
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        m = re.fullmatch(r"<!-- not run: (.*) -->", lines[k].strip()) if k >= 0 else None
        blocks.append((i + 1, [l[4:] for l in lines[i:j]], m.group(1) if m else None))
        i = j
        continue
    i += 1
for n, (lineno, body, skip) in enumerate(blocks):
    cmds = []  # [command, [shown output lines]]
    cont = False
    for l in body:
        if cont:
            cmds[-1][0] += "\n" + l
        elif l.startswith("$ "):
            cmds.append([l[2:], []])
        else:
            cmds[-1][1].append(l)
        cont = (cont or l.startswith("$ ")) and l.endswith("\\")
    d = os.path.join(out, "%03d" % n)
    os.makedirs(d)
    open(os.path.join(d, "where"), "w").write("%s:%d" % (os.path.basename(doc), lineno))
    if skip is not None:
        open(os.path.join(d, "skip"), "w").write(skip)
    ends = [k for k, c in enumerate(cmds) if c[0].strip() == "exit"]
    if ends:  # the first command's shell gets the commands up to `exit` on its stdin
        e = ends[0]
        stdin = "".join(c[0] + "\n" for c in cmds[1:e + 1])
        shown = [l for c in cmds[:e + 1] for l in c[1]]
        cmds = [[cmds[0][0], shown, stdin]] + cmds[e + 1:]
    for k, c in enumerate(cmds):
        open(os.path.join(d, "cmd.%d" % k), "w").write(c[0])
        open(os.path.join(d, "exp.%d" % k), "w").write("".join(l + "\n" for l in c[1]))
        if len(c) > 2:
            open(os.path.join(d, "stdin.%d" % k), "w").write(c[2])
EOF
}

# compare EXPECTED REAL: the shown output against the real one, by the rules above; prints
# both on a mismatch.
compare() {
  "$py" - "$1" "$2" << 'EOF'
import re, sys
exp = open(sys.argv[1]).read().split("\n")[:-1]
real = [l.rstrip() for l in open(sys.argv[2], errors="replace").read().split("\n")]
while real and not real[-1]:
    real.pop()
tok = re.compile(r"(?P<dots> *\.\.\. *)|(?P<dt>\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?)"
                 r"|(?P<ip>\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?)|(?P<hms>\b\d+(?:-\d+)?:\d\d:\d\d)"
                 r"|(?P<size>\b\d+(?:\.\d+)?[KMGT]\b)|(?P<sp> +)")
pats = {"dots": ".*", "dt": r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?",
        "ip": r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?", "hms": r"\d+(?:-\d+)?:\d\d:\d\d",
        "size": r"\d+(?:\.\d+)?[KMGT]", "sp": " +"}
def regex(line):
    out, pos = "", 0
    for m in tok.finditer(line):
        out += re.escape(line[pos:m.start()]) + pats[m.lastgroup]
        pos = m.end()
    return re.compile(out + re.escape(line[pos:]))
exp = [None if l.strip() == "..." else regex(l.rstrip()) for l in exp]
memo = {}
def match(i, j):  # exp[i:] against real[j:]
    if (i, j) not in memo:
        if i == len(exp):
            r = j == len(real)
        elif exp[i] is None:
            r = match(i + 1, j) or (j < len(real) and match(i, j + 1))
        else:
            r = j < len(real) and exp[i].fullmatch(real[j]) is not None and match(i + 1, j + 1)
        memo[i, j] = r
    return memo[i, j]
sys.setrecursionlimit(100000)
if not match(0, 0):
    print("--- shown in the doc\n" + open(sys.argv[1]).read() + "--- printed")
    print("\n".join(real))
    sys.exit(1)
EOF
}

# run_block BLOCKDIR: runs one example block in its own directory and cluster.
run_block() {
  local b=$1 where k cmd in rc out exp own=0
  where=$(cat "$b/where")
  if [ -f "$b/skip" ]; then
    echo "docs: $where: not run: $(cat "$b/skip")"
    return
  fi
  if grep -q -e '--netns' "$b"/cmd.* && [ $netns_ok = 0 ]; then
    echo "docs: $where: skipped: ip netns is not available here"
    return
  fi
  dir=$tmp/run/${b##*/}-${where%%.md:*}
  mkdir -p "$dir" || exit 1
  for e in "$src"/*; do
    case ${e##*/} in build*) ;; *) ln -s "$e" "$dir/${e##*/}" ;; esac
  done
  case $(cat "$b/cmd.0") in "gsched up"*) own=1 ;; esac
  if [ $own = 0 ]; then
    out=$(cd "$dir" && "$bin/gsched" up --workers 2 --gpus-per-node 4 2>&1) ||
      { fail_block "$where" "gsched up failed: $out"; return; }
  fi
  for ((k = 0; ; k++)); do
    [ -f "$b/cmd.$k" ] || break
    cmd=$(cat "$b/cmd.$k")
    in=/dev/null
    [ -f "$b/stdin.$k" ] && in=$b/stdin.$k
    (cd "$dir" && exec timeout 60 bash -c "$cmd" < "$in" > "$b/out.$k" 2>&1)
    rc=$?
    exp=0
    grep -q 'error:' "$b/exp.$k" && exp=1
    if [ $rc = 124 ]; then
      fail_block "$where" "timed out after 60 s: \$ $cmd\n$(cat "$b/out.$k")"
      break
    elif [ $exp = 0 ] && [ $rc != 0 ]; then
      fail_block "$where" "exit status $rc: \$ $cmd\n$(cat "$b/out.$k")"
      break
    elif [ $exp = 1 ] && [ $rc = 0 ]; then
      fail_block "$where" "exit status 0, the doc shows an error: \$ $cmd"
      break
    elif ! out=$(compare "$b/exp.$k" "$b/out.$k"); then
      fail_block "$where" "the output differs from the doc's: \$ $cmd\n$out" quiet
      break
    elif grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$b/out.$k"; then
      fail_block "$where" "sanitizer report: \$ $cmd\n$(cat "$b/out.$k")"
      break
    fi
    commands=$((commands + 1))
  done
  if ls "$dir"/.gsched/*.pid > /dev/null 2>&1; then
    out=$(cd "$dir" && "$bin/gsched" down 2>&1) || fail_block "$where" "gsched down failed: $out"
  fi
  local f
  for f in "$dir"/.gsched/*.pid; do
    [ -f "$f" ] && kill -0 "$(cat "$f")" 2> /dev/null &&
      fail_block "$where" "$(basename "$f" .pid) still runs after gsched down"
  done
  local sanitizer='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'
  if grep -lE "$sanitizer" "$dir"/.gsched/*.log 2> /dev/null; then
    fail_block "$where" "sanitizer report in a daemon's log"
  fi
  blocks=$((blocks + 1))
}

blocks=0
commands=0
for doc in "$src"/docs/*.md; do
  name=$(basename "$doc" .md)
  mkdir -p "$tmp/ex/$name" || exit 1
  extract "$doc" "$tmp/ex/$name" || { echo "docs: cannot read $doc" >&2; exit 1; }
  for b in "$tmp/ex/$name"/*/; do
    [ -d "$b" ] && run_block "${b%/}"
  done
done
[ $failures = 0 ] || { echo "docs: $failures example block(s) failed" >&2; exit 1; }
[ $blocks -ge 5 ] || { echo "docs: only $blocks example blocks ran" >&2; exit 1; }
echo "docs: passed ($blocks example blocks, $commands commands)"
