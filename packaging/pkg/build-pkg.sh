#!/usr/bin/env bash
# Builds the macOS installer package: forged, forgectl and the Core AI bridge
# into /usr/local, and a postinstall that installs and starts the LaunchAgent
# for the user logged in at the console.
#
# Not run in this project's CI (Linux); needs macOS with Xcode. See docs/SERVICE.md.
#
# usage: packaging/pkg/build-pkg.sh VERSION [OUT_DIR]
#   BUILD_DIR           where forged, forgectl and libCoreAIBridge.dylib are
#                       (default: build/ — run packaging/sign/sign-and-notarize.sh
#                       binaries first so the payload is signed)
#   INSTALLER_IDENTITY  "Developer ID Installer: Name (TEAMID)"; unsigned if empty
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 VERSION [OUT_DIR]" >&2
  exit 2
fi
version="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${2:-$root/dist}"
build="${BUILD_DIR:-$root/build}"
identifier="dev.forged.forged"

if [ "$(uname -s)" != Darwin ]; then
  echo "build-pkg.sh: pkgbuild and productbuild exist only on macOS (this is $(uname -s))" >&2
  exit 2
fi
for f in forged forgectl libCoreAIBridge.dylib; do
  [ -f "$build/$f" ] || { echo "build-pkg.sh: $build/$f is missing" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Payload: the same layout Homebrew uses under its prefix.
payload="$work/root"
install -d "$payload/usr/local/bin" "$payload/usr/local/lib/forged"
install -m 0755 "$build/forged" "$build/forgectl" "$payload/usr/local/bin/"
install -m 0644 "$build/libCoreAIBridge.dylib" "$payload/usr/local/lib/forged/"
install -m 0755 "$root/packaging/uninstall.sh" "$payload/usr/local/lib/forged/uninstall.sh"

mkdir -p "$out"
pkgbuild \
  --root "$payload" \
  --identifier "$identifier" \
  --version "$version" \
  --scripts "$root/packaging/pkg/scripts" \
  --install-location / \
  "$work/forged-component.pkg"

cat >"$work/distribution.xml" <<XML
<?xml version="1.0" encoding="utf-8"?>
<installer-gui-script minSpecVersion="2">
  <title>forged ${version}</title>
  <options customize="never" require-scripts="false" hostArchitectures="arm64"/>
  <os-version min="27.0"/>
  <choices-outline>
    <line choice="default"><line choice="${identifier}"/></line>
  </choices-outline>
  <choice id="default"/>
  <choice id="${identifier}" visible="false"><pkg-ref id="${identifier}"/></choice>
  <pkg-ref id="${identifier}" version="${version}" onConclusion="none">forged-component.pkg</pkg-ref>
</installer-gui-script>
XML

pkg="$out/forged-${version}.pkg"
sign=()
if [ -n "${INSTALLER_IDENTITY:-}" ]; then
  sign=(--sign "$INSTALLER_IDENTITY" --timestamp)
fi
productbuild --distribution "$work/distribution.xml" --package-path "$work" "${sign[@]}" "$pkg"
echo "$pkg"
