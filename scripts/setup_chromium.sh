#!/usr/bin/env bash
# Install Debian's Chromium for the browser tests when it is missing (as root, or through sudo).
# DPCORE_CHROMIUM names the browser to look for (default /usr/bin/chromium; tests point it elsewhere).
set -euo pipefail
CHROMIUM="${DPCORE_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
echo "==> installing Debian chromium for the browser test"
if [ "$(id -u)" -eq 0 ]; then
  AS_ROOT=()
elif command -v sudo >/dev/null 2>&1; then
  AS_ROOT=(sudo)
else
  echo "error: Chromium is missing and this user is not root and has no sudo; install it with" >&2
  echo "       apt-get install chromium   (as root), then run this again" >&2
  exit 1
fi
# `env` sets the variable for apt-get itself, with or without sudo in front.
"${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
