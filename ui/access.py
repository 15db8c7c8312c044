"""Who can reach this app: say so when it is shared, refuse to work when it is open to the network unprotected.

``dpcore app`` (and ./run.sh) serve on 127.0.0.1 unless the operator shares the app with a password; in that
case the password check runs in front of the app (``dpcore/cli/app.py``) and the environment variable
``DPCORE_SHARED`` tells the pages, which then say on every page that the app is shared.  Started any other way
on a network address (``streamlit run app.py --server.address 0.0.0.0``), nothing checks a password: the app
then shows only how to start it properly.
"""

from __future__ import annotations

import ipaddress
import os

import streamlit as st

SHARED_ENV = "DPCORE_SHARED"  # the same name as dpcore.cli.app.SHARED_ENV (not imported: keeps the page light)


def _loopback(host: str) -> bool:
    h = host.strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def unprotected_address() -> str | None:
    """The network address this server listens on without a password check, or None."""
    if os.environ.get(SHARED_ENV):
        return None
    address = st.get_option("server.address")
    if address and not str(address).startswith("unix://") and not _loopback(str(address)):
        return str(address)
    return None


def guard() -> None:
    """Call first on every run: the shared notice in the sidebar, or a stop when unprotected."""
    shared = os.environ.get(SHARED_ENV)
    if shared:
        st.sidebar.warning(
            "Shared on the network: everyone with the password can see this table and spend its privacy "
            "budget. The operator chose this when starting the app.",
            icon=":material/group:",
        )
        return
    address = unprotected_address()
    if address is not None:
        st.error(
            f"This app listens on {address} without a password: anyone on the network could read the private "
            "table and spend its privacy budget, so it will not open. Start it with ./run.sh or `dpcore app` "
            "(this machine only), or share it with a password: set DPCORE_SHARED_PASSWORD and run "
            "`dpcore app --host 0.0.0.0`.",
            icon=":material/lock:",
        )
        st.stop()
