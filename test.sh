#!/usr/bin/env bash
# Set up (first time) and run the whole test suite: the real-browser test and the lint gates included.
# Extra arguments go to pytest (e.g. ./test.sh -k domain).
source "$(dirname "${BASH_SOURCE[0]}")/scripts_common.sh"
bash "$ROOT/scripts/setup_chromium.sh"
exec python -m pytest -q -p no:cacheprovider "$@" tests
