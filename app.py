"""Streamlit entry: navigation over pages/, the sidebar, and session-wide upkeep.

Run with ``./run.sh`` (or ``python -m streamlit run app.py``).  Pages hold layout;
shared logic lives in ``ui/`` and the engine in ``dpcore/``.
"""

import logging
from pathlib import Path

import streamlit as st

from dpcore.errors import DPCoreError
from ui import access, datasource, sidebar, state, warmup
from ui.text import show_error

# An emoji icon is drawn by the browser itself (Streamlit makes it an inline SVG); a ":material/…" page icon
# would be fetched from fonts.gstatic.com, a request leaving this machine.
st.set_page_config(page_title="dpcore — private synthetic data", page_icon="🔒", layout="wide")
access.guard()  # shared: say so; on the network without a password: refuse (ui/access.py)

state.keep_choices()
state.init()

HERE = Path(__file__).resolve().parent
pages = [
    st.Page("pages/data.py", title="Data", icon=":material/table:", default=True),
    st.Page("pages/workload.py", title="Workload", icon=":material/grid_view:"),
    st.Page("pages/release.py", title="Release", icon=":material/play_circle:"),
    st.Page("pages/results.py", title="Results", icon=":material/bar_chart:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
]
if (HERE / "pages" / "learn.py").exists():
    pages.append(st.Page("pages/learn.py", title="Learn", icon=":material/model_training:"))
pages.append(st.Page("pages/how_it_works.py", title="How it works", icon=":material/school:"))

#: Pages that import the mechanisms, scipy and altair (see ui/warmup.py).
HEAVY_PAGES = {"Release", "Results", "Compare", "Learn", "How it works"}
page = st.navigation(pages)
datasource.sync_upload()
sidebar.render(datasource.summary())  # cheap: the first page does not wait for encoding
if page.title in HEAVY_PAGES:
    warmup.finish()  # these pages import what the warm-up imports: never from two threads at once
try:
    page.run()
except DPCoreError as exc:  # a typed error a page did not catch: say what to do, never a traceback
    show_error(exc)
except Exception as exc:  # a bug: the details go to the server log only (st.stop/st.rerun are BaseExceptions)
    logging.getLogger("dpcore.app").exception("page failed")
    st.error(
        f"Something went wrong on this page ({type(exc).__name__}). Your data, choices and runs are kept; "
        "try again or reset the session. The server log has the details.",
        icon=":material/error:",
    )
finally:
    state.save_choices()  # a reload or a restart comes back with these choices
    warmup.start_once()  # after the page is out (even after st.stop): load the later pages' modules
