#!/usr/bin/env bash
# Acceptance at full size: kill -9 `forgectl pull` in the middle of a
# SIZE-byte file (default 2 GiB), rerun it, and print how many bytes were
# downloaded twice (target: at most one part, the 64 MiB checkpoint interval).
# Usage: bench/bundle/kill-resume.sh [SIZE] [KILL_AT_FRACTION_PERCENT]
set -euo pipefail
cd "$(dirname "$0")/../.."
size="${1:-$((2 << 30))}"
pct="${2:-50}"
part=$((64 << 20))
work="$(mktemp -d "${TMPDIR:-/tmp}/forge-kill-resume.XXXXXX")"
hub_pid=""
cleanup() {
  [ -n "$hub_pid" ] && kill "$hub_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/forgectl" ./cmd/forgectl
go build -o "$work/hubserve" ./bench/bundle/hubserve
"$work/hubserve" -gen-only -gen "$work/src" -size "$size" -layers 8 -chunk-layers 8
"$work/hubserve" "anemll/bench=$work/src" >"$work/url" 2>/dev/null &
hub_pid=$!
while [ ! -s "$work/url" ]; do sleep 0.1; done
url="$(cat "$work/url")"
sha=$(grep -A3 '"coreai/chunk_L00-07.aimodel/weights/weight-00.bin"' "$work/src/release.json" | grep -o '"sha256": "[0-9a-f]*"' | grep -o '[0-9a-f]\{64\}')
partial="$work/data/partial/$sha.part"
kill_at=$((size * pct / 100))

"$work/forgectl" pull --endpoint "$url" --data "$work/data" anemll/bench >/dev/null 2>&1 &
pull_pid=$!
while :; do
  have=$(stat -c %s "$partial" 2>/dev/null || echo 0)
  [ "$have" -ge "$kill_at" ] && break
  kill -0 "$pull_pid" 2>/dev/null || { echo "pull finished before the kill point; use a larger SIZE" >&2; exit 1; }
  sleep 0.02
done
kill -9 "$pull_pid"; wait "$pull_pid" 2>/dev/null || true
on_disk=$(stat -c %s "$partial")
checkpoint=$(grep -o '"offset":[0-9]*' "$partial.state" | grep -o '[0-9]*$')
echo "killed -9 with $on_disk of $size bytes on disk; last checkpoint at $checkpoint"

"$work/forgectl" pull --json --endpoint "$url" --data "$work/data" anemll/bench | tail -1 >"$work/result.json"
resumed=$(grep -o '"resumed_bytes":[0-9]*' "$work/result.json" | grep -o '[0-9]*$')
status=$(grep -o '"status":"[A-Z]*"' "$work/result.json")
again=$((on_disk - resumed))
echo "rerun: resumed from $resumed, $status; bytes downloaded again: $again (part size $part)"
[ "$again" -le "$part" ] && echo "OK: at most one part" || { echo "FAIL: more than one part"; exit 1; }
