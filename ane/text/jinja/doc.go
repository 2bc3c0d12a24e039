// Package jinja is the sandboxed Jinja engine chat templates are rendered
// with: the subset Hugging Face chat templates use, with Python Jinja2's
// semantics by default (as transformers renders them; tojson as
// json.dumps) and the JavaScript renderer's as an option. docs/CHAT.md
// describes it.
package jinja
