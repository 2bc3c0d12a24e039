#!/usr/bin/env bash
# Builds the Core AI bridge dylib (ane/coreai/cai/bridge/CoreAIBridge.swift) on
# macOS 27+ with Xcode's swiftc and signs it with the daemon's identity.
# Not run in this project's CI (Linux); see docs/COREAI.md.
#
# usage: packaging/bridge/build.sh [OUT_DIR]
#   SIGN_IDENTITY  codesign identity (default "-": ad-hoc)
#   ARCH           target architecture (default arm64)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build}"
identity="${SIGN_IDENTITY:--}"
arch="${ARCH:-arm64}"
src="$root/ane/coreai/cai/bridge/CoreAIBridge.swift"
lib="$out/libCoreAIBridge.dylib"

if [ "$(uname -s)" != Darwin ]; then
  echo "build.sh: the bridge needs macOS with the Core AI SDK (this is $(uname -s))" >&2
  exit 2
fi
command -v swiftc >/dev/null || { echo "build.sh: swiftc not found (install Xcode 27)" >&2; exit 2; }

mkdir -p "$out"
swiftc -emit-library -O \
  -target "$arch-apple-macos27.0" \
  -module-name CoreAIBridge \
  -Xlinker -install_name -Xlinker @rpath/libCoreAIBridge.dylib \
  -o "$lib" "$src"

codesign --force --timestamp=none --options runtime --sign "$identity" "$lib"
codesign --verify --verbose=2 "$lib"

# Every symbol the Go binding registers must be exported.
exports="$(nm -gU "$lib")"
missing=0
while IFS= read -r sym; do
  if ! grep -q " _$sym\$" <<<"$exports"; then
    echo "build.sh: $lib does not export $sym" >&2
    missing=1
  fi
done < <(grep -o '@_cdecl("[a-z_]*")' "$src" | sed 's/@_cdecl("\(.*\)")/\1/')
[ "$missing" = 0 ]
echo "$lib"
