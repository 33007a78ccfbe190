#!/usr/bin/env bash
# What a lent GPU machine receives, measured before asking for one: the working tree that travels
# (tracked files and untracked ones git does not ignore) plus the ignored paths named to carry
# (the bundle, wheels), against the 64 MiB a call may carry.
#
#   scripts/gpu/carry-size.sh [CARRIED_PATH...]      e.g. scripts/gpu/carry-size.sh gpu-bundle
#
# Prints the total and the largest items; exit 1 over the limit, 2 when a carried path is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
limit=$((64 << 20))
tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c '%s %n' 2>/dev/null | sort -rn)
tree_bytes=$(awk '{s += $1} END {print s + 0}' <<< "$tree")
total=$tree_bytes
echo "working tree: $((tree_bytes >> 20)) MiB ($(wc -l <<< "$tree") files); largest:"
head -5 <<< "$tree" | awk '{printf "  %8d KiB  %s\n", $1 / 1024, $2}'
for path in "$@"; do
  [[ -e $path ]] || { echo "carried path $path: not here" >&2; exit 2; }
  bytes=$(du -sb "$path" | cut -f1)
  total=$((total + bytes))
  echo "carried $path: $((bytes >> 10)) KiB"
done
echo "total: $((total >> 20)) MiB of $((limit >> 20)) MiB ($((total * 100 / limit)) %)"
((total <= limit)) || { echo "over the limit: carry less" >&2; exit 1; }
