#!/usr/bin/env bash
# Set up (first time) and start the app on the bundled Adult census sample.
# Extra arguments go to `streamlit run` (e.g. ./run.sh --server.port 8600).
source "$(dirname "${BASH_SOURCE[0]}")/scripts_common.sh"
exec python -m streamlit run app.py --server.headless true "$@"
