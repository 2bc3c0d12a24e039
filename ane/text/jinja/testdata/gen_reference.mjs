// Regenerates reference.jsonl from cases.json with the reference renderer,
// @huggingface/jinja 0.5.11 (the renderer behind the repository's testdata/qwen3/chat_renders.jsonl):
//   npm install @huggingface/jinja@0.5.11 && node gen_reference.mjs [cases.json reference.jsonl]
// Each output line is a case plus "text" (the rendering) or "error": true.
import { Template } from "@huggingface/jinja";
import fs from "fs";

const [input = "cases.json", output = "reference.jsonl"] = process.argv.slice(2);
const cases = JSON.parse(fs.readFileSync(new URL(input, import.meta.url), "utf8"));
const out = [];
for (const c of cases) {
  const line = { name: c.name, template: c.template, context: c.context ?? {} };
  try {
    line.text = new Template(c.template).render(line.context);
  } catch (e) {
    line.error = true;
  }
  out.push(JSON.stringify(line));
}
fs.writeFileSync(new URL(output, import.meta.url), out.join("\n") + "\n");
