#!/bin/sh
# Removes forged installed by the pkg: the LaunchAgent of the user running
# this script (and, as root, the system LaunchDaemon), the binaries and the
# package receipt. Keeps downloaded bundles and the config unless --purge.
#
# usage: sudo /usr/local/lib/forged/uninstall.sh [--purge]
#   run with sudo from the user's own account: the agent belongs to
#   $SUDO_USER, the files under /usr/local to root.
set -eu

purge=""
case "${1:-}" in
  --purge) purge="--purge" ;;
  "") ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac

forged="/usr/local/bin/forged"
label="dev.forged.forged"

if [ "$(id -u)" -ne 0 ]; then
  echo "uninstall.sh: run with sudo (the files under /usr/local belong to root)" >&2
  exit 1
fi

user="${SUDO_USER:-}"
if [ -n "$user" ] && [ "$user" != root ]; then
  uid="$(id -u "$user")"
  if [ -x "$forged" ]; then
    launchctl asuser "$uid" sudo -H -u "$user" "$forged" uninstall $purge || true
  else
    launchctl bootout "gui/$uid/$label" 2>/dev/null || true
    home="$(dscl . -read "/Users/$user" NFSHomeDirectory | awk '{print $2}')"
    rm -f "$home/Library/LaunchAgents/$label.plist"
  fi
fi

if [ -f "/Library/LaunchDaemons/$label.plist" ]; then
  if [ -x "$forged" ]; then
    "$forged" uninstall --system $purge || true
  else
    launchctl bootout "system/$label" 2>/dev/null || true
    rm -f "/Library/LaunchDaemons/$label.plist"
  fi
fi

rm -f /usr/local/bin/forged /usr/local/bin/forgectl
rm -rf /usr/local/lib/forged
pkgutil --forget "$label" >/dev/null 2>&1 || true
echo "forged removed${purge:+ (with its data)}; logs remain in ~/Library/Logs/forged"
