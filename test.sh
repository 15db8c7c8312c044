#!/usr/bin/env bash
# Set up (first time) and run the whole test suite, the real-browser test included.
# Extra arguments go to pytest (e.g. ./test.sh -k domain).
source "$(dirname "${BASH_SOURCE[0]}")/scripts_common.sh"
if [ ! -x /usr/bin/chromium ]; then
  echo "==> installing Debian chromium for the browser test"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
exec python -m pytest -q -p no:cacheprovider "$@" tests
