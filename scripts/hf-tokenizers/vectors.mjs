// Reference vectors for ane/text/tokenizer from Hugging Face tokenizers (the Rust
// library through its Node binding, npm "tokenizers"): ~5,000 adversarial
// texts encoded with the repository's Qwen3 tokenizer.json, and the four
// Unicode normalizations of every code point they change plus mark runs.
// Run by scripts/hf-reference (which installs the package); the output is
// committed under testdata/hf-tokenizers and compared by the Go tests.
//
// usage: node vectors.mjs TOKENIZER_JSON OUT_DIR
//   OUT_DIR/qwen3-encodings.jsonl  {"text", "ids", "decoded"}   (add_special_tokens: false; decode keeps special tokens)
//   OUT_DIR/normalize.jsonl        {"text", "nfc", "nfd", "nfkc", "nfkd"}
//   OUT_DIR/meta.json              what produced them
//
// The texts are built from a fixed seed, so a rerun with the same package
// version writes the same files. The expected values are the library's only.
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  Tokenizer, nfcNormalizer, nfdNormalizer, nfkcNormalizer, nfkdNormalizer,
} from "tokenizers";

const [tokenizerPath, outDir] = process.argv.slice(2);
if (!tokenizerPath || !outDir) {
  console.error("usage: node vectors.mjs TOKENIZER_JSON OUT_DIR");
  process.exit(2);
}
const require = createRequire(import.meta.url);
const version = require("tokenizers/package.json").version;
const tok = Tokenizer.fromFile(tokenizerPath);

// --- deterministic randomness (xorshift32) ---
let seed = 20260301;
const rnd = () => {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 2 ** 32;
};
const int = (n) => Math.floor(rnd() * n);
const pick = (a) => a[int(a.length)];
const cp = (c) => String.fromCodePoint(c);
const repeat = (f, n) => Array.from({ length: n }, f).join("");

// --- code point sets: JavaScript's Unicode (V8/ICU) and the library's own ---
const all = [];
for (let c = 0; c <= 0x10ffff; c++) if (c < 0xd800 || c > 0xdfff) all.push(c);
const jsHas = (re) => all.filter((c) => re.test(cp(c)));

// The library's \p{L}, \p{N} and \s, asked through a Split pre-tokenizer
// (what tokenizer.json's pattern runs).
function hfClass(regex) {
  const t = Tokenizer.fromString(JSON.stringify({
    version: "1.0", truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: { type: "Split", pattern: { Regex: regex }, behavior: "Removed", invert: true },
    post_processor: null, decoder: null,
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: {}, merges: [] },
  })).getPreTokenizer();
  const out = new Set();
  for (let i = 0; i < all.length; i += 4096) {
    for (const [s] of t.preTokenizeString(String.fromCodePoint(...all.slice(i, i + 4096)))) {
      for (const ch of s) out.add(ch.codePointAt(0));
    }
  }
  return out;
}
const hfL = hfClass("\\p{L}"), hfN = hfClass("\\p{N}"), hfS = hfClass("\\s");
const jsL = new Set(jsHas(/\p{L}/u)), jsN = new Set(jsHas(/\p{N}/u));
const jsM = jsHas(/\p{M}/u);
// JavaScript's tables (V8/ICU) may be newer than the library's: letters and
// digits only JavaScript knows are among the inputs too (the library must
// treat them as "other").
const jsOnlyLetters = [...jsL].filter((c) => !hfL.has(c));
const jsOnlyNumbers = [...jsN].filter((c) => !hfN.has(c));
const letters = [...hfL], numbers = [...hfN], spaces = [...hfS];

const nfc = nfcNormalizer(), nfd = nfdNormalizer(), nfkc = nfkcNormalizer(), nfkd = nfkdNormalizer();
// The library's non-starters: marks that move past U+0334 (class 1) or that
// U+0345 (class 240) moves past in NFD.
const nonStarters = all.filter((c) => {
  const s = cp(c);
  if (nfd.normalizeString(s) !== s) return false;
  return nfd.normalizeString(s + "\u0334") === "\u0334" + s || nfd.normalizeString("\u0345" + s) === s + "\u0345";
});
const marks = [...new Set([...jsM, ...nonStarters])].sort((a, b) => a - b);
const postMarks = jsM.filter((c) => !nonStarters.includes(c)); // marks the library treats as starters (new after its tables, or class 0)

const texts = [];
const seen = new Set();
const add = (t) => {
  if (t !== "" && !seen.has(t)) {
    seen.add(t);
    texts.push(t);
  }
};

// 1. The reproducers and fixed corners.
[
  "a\u1AC1\u0323", "\u0628\u08CA\u0650", "e" + "\u0301".repeat(31), "\u{1385D}'s",
  "e" + "\u0301".repeat(29), "e" + "\u0301".repeat(30), "e" + "\u0301".repeat(60), "a" + "\u0323\u0301".repeat(20),
  "\uAC00\u11A7", "\uAC00\u11A8", "\uAC00\u11C2", "\uAC00\u11C3", "\u1100\u1161", "\u1100\u1161\u11A8", "\u1112\u1175\u11C2",
  "\u1100\u1176", "\u1113\u1161", "\uA960\u1161", "\u1100\uD7B0", "\uAC01\u11A8", "\u110B\u1167\u11BC \u1100\u1161",
  "\u212B", "\u2126", "\u212A", "\uF900", "\u{2F800}", "\u0958", "\u2ADC", "\u0344", "\u0F73", "\u0F75", "\u0F81", "\u0F77",
  "\u0385", "\u1FEE", "\u1E9B\u0323", "\u1E69", "s\u0307\u0323", "s\u0323\u0307", "\u1E0B\u0323", "q\u0307\u0323",
  "\u0B47\u0B3E", "\u0B47\u0B57", "\u0DD9\u0DCF\u0DCA", "\u09C7\u09BE", "\u1025\u102E", "\u{11131}\u{11127}", "\u{110A5}\u{110BA}",
  "\u{11347}\u{1133E}", "\u{114B9}\u{114BA}", "\u{115B8}\u{115AF}", "\u{11935}\u{11930}",
  "x \uFEFFy", "a \u0085b", "\uFEFFBOM", "a\u180Eb", "a\u200Bb", "a\u2060b", "a\u2028b\u2029c", "a\u00A0b", "a\u3000b", "a\u1680b",
  "'s", "'S", "'\u017F", "'K", "'\u212A", "'\u017Ft", "'LL", "'lL", "'Re", "'rE", "'VE", "'M", "'D", "'T", "x'\u017F", "\u00DF's",
  "\u0130stanbul", "I\u0307", "\uFB01le", "\uFB06", "\u1E9E's",
  "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<think>\n\n</think>\n\n", "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
].forEach(add);

// 2. Combining-mark runs on varied bases: every mark class, long runs (past
// 30 non-starters), marks new after the library's tables.
const bases = ["a", "e", "o", "A", "\u0627", "\u0628", "\u0915", "\uAC00", "\u1100", "\u03B1", "\u05D0", "\u0E01", "x", " ", "1", "\u{1385D}", "\u4E2D", "", "\u0334"];
for (let i = 0; i < 600; i++) {
  const n = 1 + (i % 7 === 0 ? 25 + int(40) : int(6));
  const pool = i % 3 === 0 ? postMarks : i % 3 === 1 ? nonStarters : marks;
  add(pick(bases) + repeat(() => cp(pick(pool)), n) + (i % 4 === 0 ? pick([" ", "'s", "x", "\u0301", "\n"]) : ""));
}
for (let i = 0; i < postMarks.length; i += 3) {
  add(postMarks.slice(i, i + 3).map((m) => "a" + cp(m) + "\u0323 \u0628" + cp(m) + "\u0650").join(" "));
}

// 3. Every script: a few letters from each 128-code-point block with letters,
// in words, after spaces and before contractions.
const blocks = new Map();
for (const c of letters) {
  const b = c >> 7;
  if (!blocks.has(b)) blocks.set(b, []);
  blocks.get(b).push(c);
}
for (const [, cs] of blocks) {
  const word = () => repeat(() => cp(pick(cs)), 1 + int(6));
  add(word() + " " + word() + pick(["'s", "'S", "'ll", "'Re", "'ve", "'m", "'d", "'t", "'\u017F", "'LL", ".", " 12", "\n"]));
}
const numberBlocks = new Set();
for (const c of numbers) {
  if (!numberBlocks.has(c >> 7)) {
    numberBlocks.add(c >> 7);
    add(cp(c) + pick(["'s", "1", "x", " 2", "'S"]));
  }
}

// 4. Letters and digits in either table but not both, alone and before
// contractions, digits and marks; and random letters before contractions.
const eitherOnly = [...jsOnlyLetters, ...jsOnlyNumbers];
for (let i = 0; i < 500; i++) {
  const c = cp(i % 2 === 0 && eitherOnly.length ? pick(eitherOnly) : pick(i % 4 === 1 ? numbers : letters));
  add(pick(["", " ", "x", "1", "'", "\u0301"]) + c + pick(["'s", "'S", "'ll", "'Re", "'ve", "'m", "'d", "'t", "'\u017F", "", "1", " x", c, "\u0301's"]));
}

// 5. Contractions after rare letters, marks, numbers and other characters.
for (let i = 0; i < 400; i++) {
  const before = pick([() => cp(pick(letters)), () => cp(pick(numbers)), () => cp(pick(marks)), () => cp(pick(all)), () => pick(["", " ", "\n", "  "])])();
  add(before + pick(["'s", "'S", "'t", "'re", "'RE", "'ve", "'m", "'ll", "'Ll", "'d", "'\u017F", "'K", "''s", "' s"]) + pick(["", " ", "x", cp(pick(letters)), "'s"]));
}

// 6. Emoji: ZWJ sequences, skin tones, flags, keycaps, tag sequences, variation selectors.
const people = [0x1f468, 0x1f469, 0x1f466, 0x1f467, 0x1f9d1, 0x1f474, 0x1f475];
const objects = [0x2764, 0x1f48b, 0x1f373, 0x1f4bb, 0x1f680, 0x1f52c, 0x2695, 0x1f33e, 0x1f9af, 0x1f9bd, 0x1f525];
const tones = [0x1f3fb, 0x1f3fc, 0x1f3fd, 0x1f3fe, 0x1f3ff];
for (let i = 0; i < 300; i++) {
  const person = () => cp(pick(people)) + (rnd() < 0.5 ? cp(pick(tones)) : "");
  const seq = [person()];
  for (let k = int(4); k > 0; k--) seq.push(rnd() < 0.6 ? person() : cp(pick(objects)) + (rnd() < 0.5 ? "\uFE0F" : ""));
  add(pick(["", "hi ", " "]) + seq.join("\u200D") + pick(["", " ok", "!", "\u200D"]));
}
for (let i = 0; i < 100; i++) {
  const flag = () => cp(0x1f1e6 + int(26)) + cp(0x1f1e6 + int(26));
  const keycap = () => pick("#*0123456789".split("")) + "\uFE0F\u20E3";
  const tag = () => "\u{1F3F4}" + repeat(() => cp(0xe0061 + int(26)), 5) + "\u{E007F}";
  add([flag, keycap, tag, () => "\u2764\uFE0E", () => "\u263A\uFE0F"].map((f) => f()).slice(int(3)).join(pick(["", " ", "x"])));
}

// 7. Numbers: digits of every script, long runs, decimals, signs, exponents,
// superscripts, fractions, Roman numerals, digits mixed with letters.
for (let i = 0; i < 500; i++) {
  const digits = () => repeat(() => cp(pick(numbers)), 1 + int(i % 5 === 0 ? 40 : 6));
  const ascii = () => String(int(1e9)).slice(0, 1 + int(9));
  add(pick([
    () => digits(),
    () => ascii() + pick([".", ",", " ", "e-", "E+", "/", ":", "-"]) + ascii(),
    () => pick(["-", "+", "$", "€", "~", ""]) + ascii() + pick(["%", "px", "k", "'s", "th", "\u00B2", "\u00BD", ""]),
    () => ascii() + digits() + cp(pick(letters)),
    () => pick(["\u00B9\u00B2\u00B3", "\u00BD\u2153\u215E", "\u2160\u2161\u216B", "\u2460\u2473", "\u0661\u0662\u0663", "\u0967\u0968", "\uFF11\uFF12"]) + ascii(),
  ])());
}

// 8. Special tokens: each alone, adjacent, glued to text, with spaces and
// newlines around, and near-misses.
const added = JSON.parse(readFileSync(tokenizerPath, "utf8")).added_tokens.map((a) => a.content);
for (const a of added) {
  add(a);
  add(" " + a + " ");
  add("x" + a + "y");
  add(a + a);
  add("\n" + a + "\n\n");
  add(a.slice(0, -1));
  add(a.slice(1));
  add(a.toUpperCase());
}
for (let i = 0; i < 200; i++) add(repeat(() => pick([pick(added), " ", "\n", "hi", "\u00E9", "'s", "12", "<", ">", "|", "<|", "|>"]), 2 + int(6)));

// 9. Whitespace runs: every White_Space character and the format characters
// that are not whitespace, in runs before, between and after words.
const ws = [...spaces, 0x200b, 0xfeff, 0x180e, 0x2060, 0x200d];
for (let i = 0; i < 400; i++) {
  const run = () => repeat(() => cp(pick(rnd() < 0.5 ? [0x20, 0x0a, 0x09, 0x0d] : ws)), 1 + int(i % 6 === 0 ? 50 : 5));
  add(pick(["", run()]) + pick(["word", "x", "\u00E9t\u00E9", "12", "!!", "\u4E2D"]) + run() + pick(["", "y", "'s", run()]));
}

// 10. Mixtures of all of the above.
const piecesOf = texts.slice();
const target = Math.max(5000, texts.length + 300);
for (let i = 0; texts.length < target && i < 20000; i++) add(repeat(() => pick(piecesOf), 2 + int(4)));

// --- encode and decode with the library ---
mkdirSync(outDir, { recursive: true });
const lines = [];
for (const text of texts) {
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  const ids = enc.getIds();
  const decoded = await tok.decode(ids, false);
  lines.push(JSON.stringify({ text, ids, decoded }));
}
writeFileSync(join(outDir, "qwen3-encodings.jsonl"), lines.join("\n") + "\n");

// --- normalization: every code point some form changes, each mark in
// context, and random mark runs ---
const norm = [];
const normLine = (text) => norm.push(JSON.stringify({
  text, nfc: nfc.normalizeString(text), nfd: nfd.normalizeString(text), nfkc: nfkc.normalizeString(text), nfkd: nfkd.normalizeString(text),
}));
const changed = all.filter((c) => {
  const s = cp(c);
  return nfkd.normalizeString(s) !== s || nfc.normalizeString(s) !== s || nfkc.normalizeString(s) !== s;
});
for (let i = 0; i < changed.length; i += 8) normLine(changed.slice(i, i + 8).map(cp).join(" "));
for (const c of changed) {
  const s = cp(c);
  if (nfd.normalizeString(s) !== s && rnd() < 0.25) normLine("a" + s + "\u0323\u0301");
}
for (const m of marks) {
  const s = cp(m);
  normLine(["a" + s + "\u0323", "e\u0301" + s, s + "\u0345", "\u0334" + s, "o" + s + s + "\u0308", s].join(" "));
}
for (let i = 0; i < 2000; i++) {
  normLine(repeat(() => (rnd() < 0.3 ? cp(pick(changed)) : rnd() < 0.2 ? pick(bases) : cp(pick(marks))), 2 + int(i % 10 === 0 ? 45 : 8)));
}
for (let l = 0x1100; l <= 0x1113; l++) normLine(repeat((_, k) => cp(l) + cp(0x1160 + k), 23));
for (let s = 0; s < 11172; s += 28 * 37) {
  normLine(repeat((_, t) => cp(0xac00 + s) + cp(0x11a6 + t), 30) + " " + cp(0xac00 + s + 1) + "\u11A8");
}
writeFileSync(join(outDir, "normalize.jsonl"), norm.join("\n") + "\n");

const sha256 = (p) => createHash("sha256").update(readFileSync(p)).digest("hex");
writeFileSync(join(outDir, "meta.json"), JSON.stringify({
  generator: "scripts/hf-tokenizers/vectors.mjs (run by scripts/hf-reference)",
  library: `tokenizers ${version} (npm; the Rust library's Node binding, native ${process.platform}-${process.arch} addon)`,
  node: process.version,
  tokenizer_json_sha256: sha256(tokenizerPath),
  encodings: lines.length,
  normalize_lines: norm.length,
  library_non_starters: nonStarters.length,
  javascript_marks_the_library_treats_as_starters: postMarks.length,
  library_letters: hfL.size,
  library_numbers: hfN.size,
  library_spaces: hfS.size,
  letters_only_javascript_knows: jsOnlyLetters.length,
  numbers_only_javascript_knows: jsOnlyNumbers.length,
}, null, 2) + "\n");
console.error(`wrote ${lines.length} encodings and ${norm.length} normalization lines to ${outDir}`);
