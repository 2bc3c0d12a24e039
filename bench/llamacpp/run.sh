#!/usr/bin/env bash
# The peer comparison of issue #21 on this machine: llama.cpp's own
# llama-bench and the engine (bench/cpu) in the same interleaved rounds, on
# the same synthetic checkpoints (llama.cpp's copy converted to GGUF by
# bench/llamacpp, then quantized by llama.cpp's llama-quantize).
#
#   bench/llamacpp/run.sh [bench/cpu flags]   # e.g. -rounds 5 -presets medium -threads 2
#
# llama.cpp comes from the source that node-llama-cpp's npm package
# carries (package/llama/gitRelease.bundle; the npm registry is what these
# machines reach), built once with GGML_NATIVE for this CPU into
# $LLAMACPP_DIR (default ~/.cache/forged/llamacpp-bench; rebuilt when the
# compiler flags below change; a second, AMX build beside it where the CPU
# has AMX), with
# crosscheck.sh's logits tool (csrc/logits.c). Needs git,
# cmake, g++ and npm (Debian: git cmake g++ npm). Run it on a quiet
# machine: both engines use every core they are given.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=3.22.1 # node-llama-cpp; its llama.cpp is ggml-org/llama.cpp as bundled there
types="${LLAMACPP_TYPES:-Q4_0 Q4_K_M Q2_K}"
work="${LLAMACPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forged/llamacpp-bench}"
mkdir -p "$work"

presets=small,medium
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do # the presets bench/cpu will measure
  case "${args[$i]}" in
    -presets | --presets) presets="${args[$((i + 1))]}" ;;
    -presets=* | --presets=*) presets="${args[$i]#*=}" ;;
  esac
done

# ggml's AMX matrix path, which -march=native (GGML_NATIVE) compiles in
# where the CPU has AMX, segfaults in llama-bench's prefill on the
# Sapphire Rapids VM of session 13 (ggml_backend_amx_mul_mat, in a worker
# thread), and without it the decode there is 2.4x slower (its AVX-512
# repacked Q4_0 path). So where the CPU has AMX there are two builds: the
# main one without AMX (-mno-amx-*: both tests run) and "$work-amx" with
# it, labelled AMX, whose failing prefill bench/cpu then leaves out.
# LLAMACPP_CFLAGS replaces the main build's compiler flags, LLAMACPP_CMAKE
# adds cmake options (e.g. -DGGML_CPU_REPACK=OFF) to both.
noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
cmakeflags="${LLAMACPP_CMAKE:-}"

# build DIR CFLAGS: llama-bench, llama-quantize and the logits tool into
# DIR, unless DIR has them from the same flags.
build() {
  local dir=$1 cflags=$2
  mkdir -p "$dir"
  if [ -x "$dir/llama-bench" ] && [ -x "$dir/llama-quantize" ] && [ -x "$dir/logits" ] &&
    [ "$(cat "$dir/build-flags" 2>/dev/null)" = "$cflags $cmakeflags" ]; then
    return
  fi
  for tool in git cmake g++ npm; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool is needed to build llama.cpp (Debian: git cmake g++ npm)" >&2; exit 1; }
  done
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "run.sh: fetching llama.cpp's source (npm node-llama-cpp@$version) and building llama-bench, llama-quantize into $dir" >&2
  (cd "$tmp" && npm pack --silent "node-llama-cpp@$version" >/dev/null && tar xzf "node-llama-cpp-$version.tgz" package/llama)
  git -c advice.detachedHead=false clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/llama.cpp"
  git -C "$tmp/llama.cpp" log -1 --format='llama.cpp source: commit %H (%s)' >&2
  # shellcheck disable=SC2086 # cmakeflags is a list of options
  cmake -S "$tmp/llama.cpp" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cflags" $cmakeflags \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build "$tmp/build" -j"$(nproc)" --target llama-bench llama-quantize >/dev/null
  # crosscheck.sh's logits tool, linked against the same static libraries
  local libs
  mapfile -t libs < <(find "$tmp/build/src" "$tmp/build/ggml" -name 'lib*.a')
  g++ -O2 -x c bench/llamacpp/csrc/logits.c -x none -I"$tmp/llama.cpp/include" -I"$tmp/llama.cpp/ggml/include" \
    -Wl,--start-group "${libs[@]}" -Wl,--end-group -fopenmp -lpthread -o "$tmp/logits"
  cp "$tmp/build/bin/llama-bench" "$tmp/build/bin/llama-quantize" "$tmp/logits" "$dir/"
  echo "$cflags $cmakeflags" >"$dir/build-flags"
  rm -rf "$tmp"
}

build "$work" "${LLAMACPP_CFLAGS-$noamx}"
dirs=$work
if grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
  build "$work-amx" ""
  echo AMX >"$work-amx/label"
  dirs="$work,$work-amx"
fi

for p in ${presets//,/ }; do
  echo "run.sh: $p: converting the checkpoint to GGUF and quantizing ($types)" >&2
  go run ./bench/llamacpp -preset "$p" -out "$work/$p-BF16.gguf"
  for t in $types; do
    "$work/llama-quantize" "$work/$p-BF16.gguf" "$work/$p-$t.gguf" "$t" "$(nproc)" >"$work/$p-$t.log" 2>&1 ||
      { tail -5 "$work/$p-$t.log" >&2; exit 1; }
  done
  rm -f "$work/$p-BF16.gguf"
  if [ "$dirs" != "$work" ]; then # the AMX build reads the same files
    for t in $types; do ln -sf "$work/$p-$t.gguf" "$work-amx/$p-$t.gguf"; done
  fi
done

exec go run ./bench/cpu -llamacpp "$dirs" "$@"
