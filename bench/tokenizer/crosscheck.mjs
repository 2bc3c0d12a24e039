// Differential check against Hugging Face tokenizers (the Rust library
// through its Node binding) beyond the committed vectors: writes N random
// texts with the library's ids as JSON lines {"text", "ids"} (crosscheck.sh
// compares them with forgectl tokenize).
//
// usage: node crosscheck.mjs TOKENIZER_JSON N SEED > cases.jsonl
import { Tokenizer } from "tokenizers";

const [file, nArg, seedArg] = process.argv.slice(2);
const n = Number(nArg || "2000");
let seed = Number(seedArg || "1") >>> 0;
const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
// Every class the pre-tokenizer and the normalizer distinguish.
const pieces = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u0085", "\ufeff", "'", "'s", "'LL", "'Re", "'\u017f", "a", "Z",
  "hello", " world", "é", "e\u0301", "\u0301", "\u0323", "\u1ac1", "\u08ca", "ß", "中文", "日本語", "Привет", "مرحبا", "\u{1385d}", "1", "42",
  "٣", "Ⅻ", "½", ".", ",", "!!", "()", "{}", "<", ">", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>",
  "<|endoftext|>", "🙂", "👨‍👩‍👧", "\u200d", "ﬁ", "Ｆｕｌｌ", "_", "-", "\\", "\"", "#", "func", " x", "  y", "\n\n", " \n ",
  "\uac00", "\u11a8", "\u1100\u1161"];
const tok = Tokenizer.fromFile(file);
for (let i = 0; i < n; i++) {
  let text = "";
  const len = 1 + Math.floor(rand() * 12);
  for (let k = 0; k < len; k++) text += pieces[Math.floor(rand() * pieces.length)];
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  process.stdout.write(JSON.stringify({ text, ids: enc.getIds() }) + "\n");
}
