#!/usr/bin/env bash
# Set up (first time) and start the app on the bundled Adult census sample, on this machine only
# (127.0.0.1). Sharing it on the network is an explicit choice that needs a password:
#   DPCORE_SHARED_PASSWORD='…' ./run.sh --host 0.0.0.0
# Other arguments: --port, --workspace DIR, and options of `streamlit run` (e.g. ./run.sh --server.port 8600).
source "$(dirname "${BASH_SOURCE[0]}")/scripts_common.sh"
exec python -m dpcore.cli.app "$@"
