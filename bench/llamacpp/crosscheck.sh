#!/usr/bin/env bash
# llama.cpp's logits on the GGUF conversion against the engine's exact
# mode on the same checkpoint: whether the conversion (gguf.go) hands
# llama.cpp the model the engine runs.
#
#   bench/llamacpp/crosscheck.sh [preset]     # default small
#
# Uses the logits tool run.sh builds into $LLAMACPP_DIR (run run.sh
# first). The matrices go to llama.cpp as F32, so its products round as
# little as the engine's float path.
set -euo pipefail
cd "$(dirname "$0")/../.."
preset="${1:-small}"
work="${LLAMACPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forged/llamacpp-bench}"
[ -x "$work/logits" ] || { echo "crosscheck.sh: no $work/logits: run bench/llamacpp/run.sh first" >&2; exit 1; }
go build -o "$work/convert" ./bench/llamacpp
"$work/convert" -preset "$preset" -type F32 -out "$work/$preset-F32.gguf"
# shellcheck disable=SC2046 # the ids are separate arguments
"$work/logits" "$work/$preset-F32.gguf" $("$work/convert" -preset "$preset" -ids) >"$work/$preset-logits.txt" 2>"$work/$preset-logits.log" ||
  { tail -5 "$work/$preset-logits.log" >&2; exit 1; }
rm -f "$work/$preset-F32.gguf"
"$work/convert" -preset "$preset" -compare "$work/$preset-logits.txt"
