#!/usr/bin/env bash
# Differential check of ane/text/tokenizer against Hugging Face tokenizers (npm
# "tokenizers", the Rust library) on N random texts (default 3000): every
# text must encode to the same ids.
# usage: bench/tokenizer/crosscheck.sh [N] [SEED]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
data="${DATA:-$root/testdata/qwen3}"
if [ ! -f "$here/node_modules/tokenizers/package.json" ]; then
  (cd "$here" && npm ci --no-audit --no-fund)
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
node "$here/crosscheck.mjs" "$data/tokenizer.json" "${1:-3000}" "${2:-1}" > "$tmp/cases.jsonl"
(cd "$root" && go run ./cmd/forgectl tokenize --tokenizer "$data" --jsonl) < "$tmp/cases.jsonl" > "$tmp/ours.jsonl"
node - "$tmp/cases.jsonl" "$tmp/ours.jsonl" <<'JS'
const fs = require("fs");
const want = fs.readFileSync(process.argv[2], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const got = fs.readFileSync(process.argv[3], "utf8").trim().split("\n").map((l) => JSON.parse(l));
let bad = 0;
want.forEach((w, i) => {
  if (JSON.stringify(w.ids) !== JSON.stringify(got[i].ids)) {
    if (bad++ < 5) console.log(`differs: ${JSON.stringify(w.text)}\n  hf ${JSON.stringify(w.ids)}\n  go ${JSON.stringify(got[i].ids)}`);
  }
});
console.log(`${want.length - bad}/${want.length} random texts encode identically`);
process.exit(bad ? 1 : 0);
JS
