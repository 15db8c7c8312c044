"""Driving the app under ``streamlit.testing.v1.AppTest`` (used by tests/test_app_*.py).

AppTest resets Streamlit's "pages directory" flag before every run, and because
this repository has a ``pages/`` folder the flag comes back True: Streamlit then
runs the selected page file directly (its legacy multipage mode) instead of
``app.py``, skipping the sidebar and session upkeep that ``app.py`` does.  The
live server clears the flag the first time ``app.py`` calls ``st.navigation``;
:func:`navigation_only` makes AppTest behave the same way.
"""

from __future__ import annotations

import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@contextmanager
def navigation_only():
    from streamlit.runtime import pages_manager as pm

    original = pm.PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        pm.PagesManager.uses_pages_directory = False  # app.py's st.navigation owns the pages

    pm.PagesManager.__init__ = init
    main = sys.modules.get("__main__")
    try:
        yield
    finally:
        pm.PagesManager.__init__ = original
        # AppTest leaves app.py as __main__: a later test that spawns processes would have them import app.py.
        if main is not None:
            sys.modules["__main__"] = main


def new_app(timeout: float = 60):
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=timeout)


def wait_for_run(at, run_id: str, timeout: float = 60.0, poll: float = 0.1):
    """Rerun until the run (ui.jobs) has finished, then once more so the page shows how it ended."""
    from ui import jobs

    snap = jobs.wait(run_id, timeout)
    time.sleep(poll)
    at.run()
    return snap


@contextmanager
def session(page: str | None = None, timeout: float = 60):
    """A fresh app session (on ``page`` if given) that stops any run it started when the test ends, so no
    worker thread outlives its test's workspace."""
    from ui import jobs

    with navigation_only():
        app = new_app(timeout).run()
        if page is not None:
            app.switch_page(page).run()
        assert not app.exception, app.exception
        try:
            yield app
        finally:
            for run_id in jobs.active():
                jobs.cancel(run_id)
            for run_id in jobs.active():
                jobs.wait(run_id, 30)


def plain(markdown: str) -> str:
    """Text of a message whose user strings were escaped for Markdown (:func:`ui.text.md_escape`): as a reader sees
    it, without the backslashes and the invisible word joiners that keep web addresses from becoming links."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def errors(app) -> list[str]:
    return [plain(e.value) for e in app.error]
