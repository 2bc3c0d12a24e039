#!/bin/sh
# Renders the Homebrew formula for a release: makes the source tarball with
# `git archive` and writes a formula whose url names that tarball (uploaded
# as an asset of the GitHub release vVERSION) and whose sha256 is the
# tarball's own. The committed homebrew/forged.rb is head-only; this adds
# the stable url and sha256 after its homepage line.
#
#   packaging/homebrew/release-formula.sh VERSION [OUT_DIR] [REF]
#
# writes OUT_DIR/forged-VERSION.tar.gz and OUT_DIR/forged.rb (OUT_DIR
# defaults to dist, REF to the tag vVERSION if it exists, else HEAD).
set -eu

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  echo "usage: $0 VERSION [OUT_DIR] [REF]" >&2
  exit 2
fi
version=$1
out=${2:-dist}
case $version in
  *[!0-9A-Za-z.+-]* | "" | [!0-9]*)
    echo "$0: VERSION must look like 0.1.0, got \"$version\"" >&2
    exit 2
    ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
if [ $# -ge 3 ]; then
  ref=$3
elif git -C "$repo" rev-parse -q --verify "refs/tags/v$version" >/dev/null; then
  ref="v$version"
else
  ref=HEAD
fi

mkdir -p "$out"
tarball="$out/forged-$version.tar.gz"
git -C "$repo" archive --format=tar.gz --prefix="forged-$version/" -o "$(cd "$out" && pwd)/forged-$version.tar.gz" "$ref"

if command -v sha256sum >/dev/null 2>&1; then
  sum=$(sha256sum "$tarball" | cut -d' ' -f1)
else
  sum=$(shasum -a 256 "$tarball" | cut -d' ' -f1)
fi

url="https://github.com/forgedaemon/forged/releases/download/v$version/forged-$version.tar.gz"
awk -v url="$url" -v sum="$sum" '
  { print }
  /^  homepage / && !done { print "  url \"" url "\""; print "  sha256 \"" sum "\""; done = 1 }
  END { if (!done) { print "release-formula.sh: no homepage line to put url after" > "/dev/stderr"; exit 1 } }
' "$here/forged.rb" >"$out/forged.rb"
echo "wrote $tarball (sha256 $sum) and $out/forged.rb ($ref)"
