#!/usr/bin/env bash
# Bundle benchmarks, each against its baseline in the same script run:
#   1. forgectl pull of a bundle with one SIZE-byte file vs curl -o of the
#      same file's URL (both on loopback from the test hub; target ratio <= 1.15)
#   2. forgectl verify --full of a SIZE-byte, 20-file bundle vs
#      openssl dgst -sha256 of the same files one after another (target <= 0.6)
#   3. fast verify (install record) of an unchanged ~100-file bundle (target <= 50 ms)
# Prints medians of RUNS runs and the ratios. Usage: bench/bundle/run.sh [SIZE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
size="${1:-$((2 << 30))}"
runs="${2:-3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/forge-bundle-bench.XXXXXX")"
hub_pid=""
cleanup() {
  if [ -n "$hub_pid" ]; then kill "$hub_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/forgectl" ./cmd/forgectl
go build -o "$work/hubserve" ./bench/bundle/hubserve

now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc -l; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { echo "scale=3; $1 / $2" | bc -l; }

# start_hub DIR: serves DIR as anemll/bench, sets $url.
start_hub() {
  "$work/hubserve" "anemll/bench=$1" >"$work/url" 2>"$work/hub.log" &
  hub_pid=$!
  for _ in $(seq 1 600); do
    [ -s "$work/url" ] && break
    sleep 0.1
  done
  url="$(cat "$work/url")"
}
stop_hub() { kill "$hub_pid"; wait "$hub_pid" 2>/dev/null || true; hub_pid=""; }

echo "== 1. pull of one $size-byte file vs curl -o (loopback, $runs runs, medians)"
"$work/hubserve" -gen-only -gen "$work/one" -size "$size" -layers 8 -chunk-layers 8
start_hub "$work/one"
big="coreai/chunk_L00-07.aimodel/weights/weight-00.bin"
pull_t=(); curl_t=(); sync_t=(); disk_t=(); settle_t=()
for _ in $(seq 1 "$runs"); do
  # The disk's own floor: writing the same bytes and making them durable.
  t0=$(now); dd if=/dev/zero of="$work/disk.out" bs=1M count=$((size >> 20)) conv=fsync status=none; t1=$(now)
  disk_t+=("$(elapsed "$t0" "$t1")"); rm -f "$work/disk.out"; sync
  rm -rf "$work/data" "$work/curl.out"; sync
  t0=$(now); curl -sfL -o "$work/curl.out" "$url/anemll/bench/resolve/main/$big"; t1=$(now); sync; t2=$(now)
  curl_t+=("$(elapsed "$t0" "$t1")"); sync_t+=("$(elapsed "$t0" "$t2")")
  rm -f "$work/curl.out"; sync
  t0=$(now); "$work/forgectl" pull --endpoint "$url" --data "$work/data" anemll/bench >/dev/null; t1=$(now)
  pull_t+=("$(elapsed "$t0" "$t1")")
  # The next store open settles the pull's marker: it fsyncs the blobs.
  t0=$(now); "$work/forgectl" bundle list --data "$work/data" >/dev/null; t1=$(now)
  settle_t+=("$(elapsed "$t0" "$t1")")
done
stop_hub
p=$(printf '%s\n' "${pull_t[@]}" | median); c=$(printf '%s\n' "${curl_t[@]}" | median); cs=$(printf '%s\n' "${sync_t[@]}" | median)
echo "pull (download + sha256 while streaming + durable pending marker + install + layout verify; the blobs are fsynced at the next store open in this boot, or hashed again after a reboot): ${p}s"
echo "curl -o: ${c}s  ratio: $(ratio "$p" "$c")  (target <= 1.15)"
echo "curl -o; sync (durable on return, which pull defers to the next open): ${cs}s  ratio: $(ratio "$p" "$cs")"
st=$(printf '%s\n' "${settle_t[@]}" | median)
echo "next store open after pull (forgectl bundle list; fsyncs what the kernel has not written yet): ${st}s"
d=$(printf '%s\n' "${disk_t[@]}" | median)
floor=$(echo "if ($d > $c) $d else $c" | bc -l)
echo "disk floor (dd conv=fsync of $size bytes): ${d}s; pull / max(curl -o, disk floor): $(ratio "$p" "$floor")"
rm -rf "$work/one" "$work/data"

echo "== 2. verify --full of a $size-byte 20-file bundle vs openssl dgst -sha256 sequentially"
"$work/hubserve" -gen-only -gen "$work/twenty" -size "$size" -layers 20 -chunk-layers 1
mapfile -t files < <(find "$work/twenty" -type f ! -name release.json ! -path '*/export/*' | sort)
echo "files: ${#files[@]} (20 weight files + small ones), warm page cache for both"
openssl dgst -sha256 "${files[@]}" >/dev/null # warm the cache
ver_t=(); ssl_t=()
for _ in $(seq 1 "$runs"); do
  t0=$(now); openssl dgst -sha256 "${files[@]}" >/dev/null; t1=$(now)
  ssl_t+=("$(elapsed "$t0" "$t1")")
  t0=$(now); "$work/forgectl" verify --bundle "$work/twenty" >/dev/null; t1=$(now)
  ver_t+=("$(elapsed "$t0" "$t1")")
done
v=$(printf '%s\n' "${ver_t[@]}" | median); s=$(printf '%s\n' "${ssl_t[@]}" | median)
echo "verify --full: ${v}s  openssl dgst -sha256: ${s}s  ratio: $(ratio "$v" "$s")  (target <= 0.6, $(nproc) cores)"
rm -rf "$work/twenty"

echo "== 3. fast verify of an unchanged ~100-file bundle"
"$work/hubserve" -gen-only -gen "$work/hundred" -size $((256 << 20)) -layers 20 -chunk-layers 1 -files 4
start_hub "$work/hundred"
"$work/forgectl" pull --endpoint "$url" --data "$work/data" anemll/bench >/dev/null
stop_hub
nfiles=$("$work/forgectl" verify --data "$work/data" --repo anemll/bench --json | grep -o '"verified_files": [0-9]*' | grep -o '[0-9]*$')
fast_t=()
for _ in $(seq 1 $((runs * 3))); do
  t0=$(now); "$work/forgectl" verify --data "$work/data" --repo anemll/bench >/dev/null; t1=$(now)
  fast_t+=("$(elapsed "$t0" "$t1")")
done
start_t=()
for _ in $(seq 1 $((runs * 3))); do
  t0=$(now); "$work/forgectl" version >/dev/null; t1=$(now)
  start_t+=("$(elapsed "$t0" "$t1")")
done
f=$(printf '%s\n' "${fast_t[@]}" | median); v0=$(printf '%s\n' "${start_t[@]}" | median)
ms() { echo "$1 * 1000" | bc -l | cut -d. -f1; }
echo "fast verify of $nfiles files: $(ms "$f") ms wall incl. process start; forgectl version alone: $(ms "$v0") ms  (target <= 50 ms)"
echo "in-process (no exec): go test -run '^\$' -bench FastVerify100Files -benchtime 20x ./bundle/store"
go test -run '^$' -bench FastVerify100Files -benchtime 20x ./bundle/store | grep Benchmark
echo "(numbers from a shared machine; other processes compete for the CPUs and the disk)"
