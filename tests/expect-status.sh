#!/usr/bin/env bash
# expect-status.sh WANT CMD...: passes when CMD exits with status WANT and says something
# on stderr (a rejection without a message is a failure too).
set -u
want=$1
shift
err=$("$@" 2>&1 >/dev/null)
rc=$?
printf '%s\n' "$err"
if [ "$rc" -ne "$want" ]; then
  echo "expect-status: '$*' exited $rc, want $want" >&2
  exit 1
fi
if [ -z "$err" ]; then
  echo "expect-status: '$*' printed no error message" >&2
  exit 1
fi
exit 0
