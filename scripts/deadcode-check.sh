#!/usr/bin/env bash
# deadcode-check.sh fails when a function of the module is reachable from no binary and
# no test (`deadcode -test`), unless scripts/deadcode-allow.txt lists it with a reason.
# It also fails on an allow-list entry that deadcode no longer reports, so the list
# only ever names code that is really kept on purpose.
#
# An allow-list line is "<file>: <function>  # reason", e.g.
#   plugins/service/processor/resync.go: NewResyncEventData  # seed public API
set -euo pipefail
cd "$(dirname "$0")/.."
DEADCODE="${DEADCODE:-deadcode}"
allow=scripts/deadcode-allow.txt

report="$("$DEADCODE" -test ./...)"
# "path/file.go:12:6: unreachable func: Name" -> "path/file.go: Name"
found="$(printf '%s\n' "$report" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: unreachable func: \(.*\)$/\1: \2/p' | sort -u)"
allowed="$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$allow" | sort -u)"

unexpected="$(comm -23 <(printf '%s\n' "$found" | sed '/^$/d') <(printf '%s\n' "$allowed"))"
stale="$(comm -13 <(printf '%s\n' "$found" | sed '/^$/d') <(printf '%s\n' "$allowed"))"
rc=0
if [ -n "$unexpected" ]; then
  echo "deadcode: functions no binary and no test reaches (remove them, use them, or list them with a reason in $allow):"
  printf '  %s\n' $'\n'"$unexpected" | sed '/^  $/d'
  rc=1
fi
if [ -n "$stale" ]; then
  echo "deadcode: $allow lists functions deadcode no longer reports (remove the lines):"
  printf '  %s\n' $'\n'"$stale" | sed '/^  $/d'
  rc=1
fi
if [ "$rc" -eq 0 ]; then
  echo "deadcode: nothing unreachable beyond the $(printf '%s\n' "$allowed" | sed '/^$/d' | wc -l) allowed functions of $allow"
fi
exit "$rc"
