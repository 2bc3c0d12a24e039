#!/usr/bin/env bash
# Signs forged, forgectl and the Core AI bridge dylib with a Developer ID
# Application identity and the hardened runtime, then notarizes them (and,
# given a .pkg, signs nothing more but notarizes and staples it).
#
# Not run in this project's CI (Linux); needs macOS with Xcode and an Apple
# developer account. See docs/SERVICE.md.
#
# usage:
#   packaging/sign/sign-and-notarize.sh binaries [BUILD_DIR]   sign + notarize the three binaries
#   packaging/sign/sign-and-notarize.sh pkg FILE.pkg           notarize + staple an installer
#
# environment (one Team ID for everything):
#   TEAM_ID          Apple Developer Team ID, e.g. ABCDE12345 (required)
#   SIGN_IDENTITY    default "Developer ID Application: <anything> (TEAM_ID)" found in the keychain
#   NOTARY_PROFILE   keychain profile created with `xcrun notarytool store-credentials` (required)
set -euo pipefail

die() { echo "sign-and-notarize.sh: $*" >&2; exit 1; }

[ "$(uname -s)" = Darwin ] || die "codesign and notarytool exist only on macOS (this is $(uname -s))"
[ $# -ge 1 ] || die "usage: $0 binaries [BUILD_DIR] | pkg FILE.pkg"
: "${TEAM_ID:?TEAM_ID must be set (Apple Developer Team ID)}"
: "${NOTARY_PROFILE:?NOTARY_PROFILE must be set (xcrun notarytool store-credentials)}"
case "$TEAM_ID" in
  [A-Z0-9][A-Z0-9][A-Z0-9][A-Z0-9][A-Z0-9][A-Z0-9][A-Z0-9][A-Z0-9][A-Z0-9][A-Z0-9]) ;;
  *) die "TEAM_ID must be 10 upper-case letters or digits, got '$TEAM_ID'" ;;
esac

identity="${SIGN_IDENTITY:-}"
if [ -z "$identity" ]; then
  identity="$(security find-identity -v -p codesigning |
    sed -n "s/.*\"\(Developer ID Application: .*($TEAM_ID)\)\"/\1/p" | head -n 1)"
  [ -n "$identity" ] || die "no 'Developer ID Application: … ($TEAM_ID)' identity in the keychain"
fi
case "$identity" in
  *"($TEAM_ID)") ;;
  *) die "SIGN_IDENTITY '$identity' does not belong to team $TEAM_ID" ;;
esac

# team_of prints the TeamIdentifier codesign recorded for a file.
team_of() { codesign -dv "$1" 2>&1 | sed -n 's/^TeamIdentifier=//p'; }

notarize() {
  xcrun notarytool submit "$1" --keychain-profile "$NOTARY_PROFILE" --team-id "$TEAM_ID" --wait
}

case "$1" in
binaries)
  build="${2:-build}"
  files=("$build/libCoreAIBridge.dylib" "$build/forged" "$build/forgectl")
  for f in "${files[@]}"; do
    [ -f "$f" ] || die "$f is missing"
  done
  # The dylib first: the daemon loads it with dlopen, and library validation
  # under the hardened runtime requires the same Team ID on both.
  for f in "${files[@]}"; do
    codesign --force --timestamp --options runtime --sign "$identity" "$f"
    codesign --verify --strict --verbose=2 "$f"
    [ "$(team_of "$f")" = "$TEAM_ID" ] || die "$f is not signed by team $TEAM_ID"
  done
  # notarytool takes a zip of bare binaries; they cannot be stapled, the
  # ticket is fetched online by Gatekeeper.
  zip="$(mktemp -d)/forged-binaries.zip"
  ditto -c -k --keepParent "$build" "$zip"
  notarize "$zip"
  ;;
pkg)
  pkg="${2:-}"
  [ -f "$pkg" ] || die "usage: $0 pkg FILE.pkg"
  pkgutil --check-signature "$pkg" | grep -q "($TEAM_ID)" || die "$pkg is not signed by team $TEAM_ID (set INSTALLER_IDENTITY for build-pkg.sh)"
  notarize "$pkg"
  xcrun stapler staple "$pkg"
  xcrun stapler validate "$pkg"
  spctl --assess --type install --verbose "$pkg"
  ;;
*)
  die "unknown mode '$1' (binaries or pkg)"
  ;;
esac
