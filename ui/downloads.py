"""Large released files streamed from disk by the app's own server, not held in memory by Streamlit.

Streamlit serves ``st.download_button`` data from memory, whole (a 3.4 GB synthetic CSV peaked the server at
4.6 GB).  When the app runs under its own server (``python -m ui.serve``, which every launcher uses: ``./run.sh``,
``dpcore app``), a route ``/_dpcore/files/<run>/<file>`` streams a run's file in chunks (Starlette's
``FileResponse``), and the Results page offers a link to it instead.  Under a bare ``streamlit run app.py`` there
is no such route and the page keeps the download button.

Only files the Results page offers for that run are served, each behind a token: an HMAC of the run, the file
name and an expiry time under a secret drawn when the server starts.  A link therefore works for this server
process only, cannot be forged for another run or file, and is refused LINK_LIFETIME seconds after the page
made it (a link copied from a screen, a browser history or a proxy log is soon worthless; a download that
started in time runs to its end).  In shared mode the password check (``ui/serve.py``) stands in front of this
route as of every other.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from pathlib import Path
from urllib.parse import quote

SECRET_ENV = "DPCORE_DOWNLOAD_SECRET"
PREFIX = "/_dpcore/files"
#: Seconds a download link stays valid after the Results page made it (the page makes a fresh one on every run).
LINK_LIFETIME = 600
#: Digits of the expiry time a token may carry (a Unix time in seconds; refuses absurd values unparsed).
_EXPIRY_DIGITS = 12


def enabled() -> bool:
    """Whether this server streams files (it was started by ``ui.serve``, which sets the secret)."""
    return bool(os.environ.get(SECRET_ENV))


def token(run_id: str, name: str, expires: int) -> str:
    """``<expires>-<HMAC of run, file and expiry>``: valid for that one file of that run until ``expires``."""
    secret = os.environ.get(SECRET_ENV, "")
    signed = "\0".join((run_id, name, str(expires))).encode()  # NUL-separated: no two triples sign alike
    return f"{expires}-{hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()}"


def url(run_id: str, name: str, now: float | None = None) -> str:
    """The link to a run's file, valid LINK_LIFETIME seconds from ``now`` (default: the wall clock)."""
    expires = int(time.time() if now is None else now) + LINK_LIFETIME
    return f"{PREFIX}/{quote(run_id, safe='')}/{quote(name, safe='')}?t={token(run_id, name, expires)}"


def refusal(run_id: str, name: str, given: str, now: float | None = None) -> str | None:
    """Why the token ``given`` does not open this file now (None: it does)."""
    invalid = "This link is not valid on this server (it may be from before a restart)."
    expires_text, _, _ = given.partition("-")
    if not enabled() or not (expires_text.isascii() and expires_text.isdigit()) or len(expires_text) > _EXPIRY_DIGITS:
        return invalid
    if not hmac.compare_digest(given.encode(), token(run_id, name, int(expires_text)).encode()):
        return invalid
    if (time.time() if now is None else now) > int(expires_text):
        return (
            f"This link has expired (download links last {LINK_LIFETIME // 60} minutes): open the run on the "
            "Results page again for a fresh one."
        )
    return None


def _offered(run_id: str, name: str) -> dict | None:
    """The download entry of the run whose file is called ``name`` (None when the run has no such download)."""
    from dpcore.runs import RunStore
    from dpcore.workspace import Workspace, resolve

    from . import results

    run = RunStore(Workspace(resolve(None))).get(run_id)
    if run is None:
        return None
    for entry in results.downloads(run, stream=False):
        if Path(entry["path"]).name == name:
            return entry
    return None


def serve_file(request, now: float | None = None):
    """The route's endpoint (a plain function: Starlette runs it in its thread pool); ``now`` for tests."""
    from starlette.responses import FileResponse, PlainTextResponse

    run_id = request.path_params["run_id"]
    name = request.path_params["name"]
    refused = refusal(run_id, name, request.query_params.get("t", ""), now)
    if refused is not None:
        return PlainTextResponse(refused, 403, headers={"cache-control": "no-store"})
    try:
        entry = _offered(run_id, name)
    except Exception:  # a missing or locked workspace: say so, never a traceback
        entry = None
    if entry is None or not Path(entry["path"]).exists():
        return PlainTextResponse("This file is no longer in the workspace (the run may have been deleted).", 404)
    file_name = entry["file_name"].removesuffix(".gz")  # streamed as it is on disk, never compressed
    return FileResponse(entry["path"], media_type=entry["stream_mime"], filename=file_name)


def routes() -> list:
    from starlette.routing import Route

    return [Route(PREFIX + "/{run_id}/{name}", serve_file, methods=["GET"])]
