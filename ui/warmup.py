"""Import the heavy modules of the later pages in the background, once per server process.

The first page only needs pandas; the Release, Results, Learn and teaching pages need the
mechanisms and learners (scipy, PySCIPOpt), the run machinery and altair.  Importing them in a
daemon thread after the first page has been sent makes the first switch to those
pages as quick as the later ones.  Only code is loaded here: no data, nothing per
session.

A page that needs these modules calls :func:`finish` first (``app.py`` does, for the
pages that import them): it skips the remaining delay and waits for the warm-up, so the same
modules are never imported from two threads at once (a concurrent circular import can
fail with a deadlock error on Python 3.11).
"""

from __future__ import annotations

import logging
import threading

#: Seconds to wait first, so the browser can draw the first page without competing for the CPU.
DELAY = 2.0

_lock = threading.Lock()
_thread: threading.Thread | None = None
_go = threading.Event()


def _import_all() -> None:
    _go.wait(DELAY)
    try:
        import altair  # noqa: F401  (charts on Results/Compare/teaching)

        from . import charts, jobs, progress  # noqa: F401
        from .mechanisms import loadable

        loadable()  # imports every registered mechanism module
        import dpcore.learning.evaluate  # noqa: F401  (the Learn page's learners and SCIP models)
    except Exception:  # a warm-up failure must never affect a page; the page will report it
        logging.getLogger("dpcore.app").warning("background warm-up failed", exc_info=True)


def start_once() -> None:
    global _thread
    with _lock:
        if _thread is not None:
            return
        _thread = threading.Thread(target=_import_all, name="dpcore-warmup", daemon=True)
    _thread.start()


def finish(timeout: float = 120.0) -> None:
    """Wait for the warm-up (skipping its delay); returns at once if it never started or is done."""
    _go.set()
    thread = _thread
    if thread is not None and thread.is_alive() and thread is not threading.current_thread():
        thread.join(timeout)
