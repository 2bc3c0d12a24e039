#!/usr/bin/env python3
"""Render chat conversations with Python's Jinja2, as transformers does.

Reads cases (JSON lines {name, messages, tools?, enable_thinking?}) and the
chat_template of a tokenizer_config.json, writes the cases back with "text",
the rendering. The environment is the one transformers builds for
apply_chat_template (src/transformers/utils/chat_template_utils.py in
github.com/huggingface/transformers): ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and loopcontrols, tojson as json.dumps with
ensure_ascii=False, raise_exception. The JSON is parsed by Python's json
module, so 300.0 stays a float and 300 an int, as in transformers.

  scripts/python-jinja2/render.py testdata/qwen3/tokenizer_config.json \
      testdata/python-jinja2/cases.jsonl > testdata/python-jinja2/qwen3_renders.jsonl
"""
import json
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    config_path, cases_path = sys.argv[1], sys.argv[2]
    with open(config_path, encoding="utf-8") as f:
        source = json.load(f)["chat_template"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(source)
    with open(cases_path, encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            case.setdefault("add_generation_prompt", True)
            kwargs = {"messages": case["messages"], "add_generation_prompt": case["add_generation_prompt"]}
            if "tools" in case:
                kwargs["tools"] = case["tools"]
            if "enable_thinking" in case:
                kwargs["enable_thinking"] = case["enable_thinking"]
            case["text"] = template.render(**kwargs)
            case["renderer"] = "jinja2 " + jinja2.__version__
            sys.stdout.write(json.dumps(case, ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
