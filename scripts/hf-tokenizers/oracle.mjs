// A question-and-answer loop over Hugging Face tokenizers (the Rust library,
// through its Node binding): the generator of ane/text/tokenizer's Unicode tables
// (ane/text/tokenizer/internal/gentables) asks it how the library normalizes and
// splits text, so the tables are the library's, not a Unicode version's.
//
// One JSON request a line on stdin, one JSON answer a line on stdout:
//   {"op": "version"}                                   → {"out": "0.23.2"}
//   {"op": "normalize", "form": "NFC", "texts": [...]}  → {"out": [normalized, ...]}   (NFC, NFD, NFKC, NFKD)
//   {"op": "matches", "regex": "\\p{L}", "texts": [...]} → {"out": [[match, ...], ...]}
// "matches" runs a Split pre-tokenizer with that regex, exactly as a
// tokenizer.json's {"type": "Split", "pattern": {"Regex": …}} does (Oniguruma),
// and returns the matched substrings of each text in order.
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import {
  Tokenizer, nfcNormalizer, nfdNormalizer, nfkcNormalizer, nfkdNormalizer,
} from "tokenizers";

const require = createRequire(import.meta.url);
const version = require("tokenizers/package.json").version;

const normalizers = { NFC: nfcNormalizer(), NFD: nfdNormalizer(), NFKC: nfkcNormalizer(), NFKD: nfkdNormalizer() };

const splitters = new Map();
function splitter(regex) {
  let pt = splitters.get(regex);
  if (!pt) {
    const tok = Tokenizer.fromString(JSON.stringify({
      version: "1.0", truncation: null, padding: null, added_tokens: [], normalizer: null,
      pre_tokenizer: { type: "Split", pattern: { Regex: regex }, behavior: "Removed", invert: true },
      post_processor: null, decoder: null,
      model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
        fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: {}, merges: [] },
    }));
    pt = tok.getPreTokenizer();
    splitters.set(regex, pt);
  }
  return pt;
}

function answer(req) {
  switch (req.op) {
    case "version":
      return version;
    case "normalize": {
      const n = normalizers[req.form];
      if (!n) throw new Error(`unknown form ${req.form}`);
      return req.texts.map((t) => n.normalizeString(t));
    }
    case "matches": {
      const pt = splitter(req.regex);
      return req.texts.map((t) => pt.preTokenizeString(t).map(([s]) => s));
    }
  }
  throw new Error(`unknown op ${req.op}`);
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (line === "") continue;
  let reply;
  try {
    reply = { out: answer(JSON.parse(line)) };
  } catch (e) {
    reply = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
