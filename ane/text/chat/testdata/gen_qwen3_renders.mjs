// Regenerates qwen3_renders.jsonl: seeded random conversations rendered with the real Qwen3
// chat template (the repository's testdata/qwen3/tokenizer_config.json) by the reference renderer,
// @huggingface/jinja 0.5.11 — the renderer behind testdata/qwen3/chat_renders.jsonl:
//   npm install @huggingface/jinja@0.5.11 && node gen_qwen3_renders.mjs
import { Template } from "@huggingface/jinja";
import fs from "fs";

const cfg = JSON.parse(fs.readFileSync(new URL("../../../testdata/qwen3/tokenizer_config.json", import.meta.url)));
const tpl = new Template(cfg.chat_template);

let state = 12345;
const rnd = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
const pick = (xs) => xs[Math.floor(rnd() * xs.length)];

const texts = ["Hi", "What is 2+2?", "Résumé of 東京 ☕ — \"quoted\" \\ back", "line1\nline2\n", "  padded  ", "",
  "<tool_response>\nx\n</tool_response>", "emoji 😀 and tab\t", "<think>\nplan\n</think>\n\nDone.", "ends with newline\n"];
const tools = [
  { type: "function", function: { name: "get_weather", description: "Get the weather", parameters: { type: "object",
    properties: { city: { type: "string", description: "City, e.g. Zürich" }, days: { type: "integer", minimum: 1 } }, required: ["city"] } } },
  { type: "function", function: { name: "search", description: "Search \"docs\"", parameters: { type: "object", properties: { q: { type: "string" } } } } },
];
const args = [{ city: "Paris" }, { city: "São Paulo", days: 3 }, "{\"q\": \"raw string args\"}", { q: "x", nested: { a: [1, 2.5, null, true] } }];

const lines = [];
for (let i = 0; i < 150; i++) {
  const messages = [];
  if (rnd() < 0.4) messages.push({ role: "system", content: pick(texts) });
  const turns = 1 + Math.floor(rnd() * 4);
  for (let t = 0; t < turns; t++) {
    messages.push({ role: "user", content: pick(texts) });
    if (t === turns - 1 && rnd() < 0.5) break;
    const m = { role: "assistant", content: pick(texts) };
    if (rnd() < 0.3) m.reasoning_content = pick(texts);
    if (rnd() < 0.4) {
      m.tool_calls = [];
      const n = 1 + Math.floor(rnd() * 2);
      for (let k = 0; k < n; k++) {
        const call = { name: pick(["get_weather", "search"]), arguments: pick(args) };
        m.tool_calls.push(rnd() < 0.7 ? { type: "function", function: call } : call);
      }
      messages.push(m);
      const r = 1 + Math.floor(rnd() * 2);
      for (let k = 0; k < r; k++) messages.push({ role: "tool", content: pick(texts) });
    } else {
      messages.push(m);
    }
  }
  const req = { name: `random_${i}`, messages, add_generation_prompt: rnd() < 0.8 };
  if (rnd() < 0.5) req.tools = tools;
  const r = rnd();
  if (r < 0.3) req.enable_thinking = false;
  else if (r < 0.5) req.enable_thinking = true;
  try {
    req.text = tpl.render(req);
  } catch (e) {
    continue;
  }
  lines.push(JSON.stringify(req));
}
fs.writeFileSync(new URL("qwen3_renders.jsonl", import.meta.url), lines.join("\n") + "\n");
