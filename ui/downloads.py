"""Large released files streamed from disk by the app's own server, not held in memory by Streamlit.

Streamlit serves ``st.download_button`` data from memory, whole (a 3.4 GB synthetic CSV peaked the server at
4.6 GB).  When the app runs under its own server (``python -m ui.serve``, which every launcher uses: ``./run.sh``,
``dpcore app``), a route ``/_dpcore/files/<run>/<file>`` streams a run's file in chunks (Starlette's
``FileResponse``), and the Results page offers a link to it instead.  Under a bare ``streamlit run app.py`` there
is no such route and the page keeps the download button.

Only files the Results page offers for that run are served, each behind a token: an HMAC of the run and file
name under a secret drawn when the server starts, so a link works for this server process only and cannot be
forged for another file.  In shared mode the password check (``ui/serve.py``) stands in front of this route as
of every other.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from urllib.parse import quote

SECRET_ENV = "DPCORE_DOWNLOAD_SECRET"
PREFIX = "/_dpcore/files"


def enabled() -> bool:
    """Whether this server streams files (it was started by ``ui.serve``, which sets the secret)."""
    return bool(os.environ.get(SECRET_ENV))


def token(run_id: str, name: str) -> str:
    secret = os.environ.get(SECRET_ENV, "")
    return hmac.new(secret.encode(), f"{run_id}/{name}".encode(), hashlib.sha256).hexdigest()


def url(run_id: str, name: str) -> str:
    return f"{PREFIX}/{quote(run_id, safe='')}/{quote(name, safe='')}?t={token(run_id, name)}"


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


def serve_file(request):
    """The route's endpoint (a plain function: Starlette runs it in its thread pool)."""
    from starlette.responses import FileResponse, PlainTextResponse

    run_id = request.path_params["run_id"]
    name = request.path_params["name"]
    given = request.query_params.get("t", "")
    if not enabled() or not hmac.compare_digest(given.encode(), token(run_id, name).encode()):
        return PlainTextResponse("This link is not valid on this server (it may be from before a restart).", 403)
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
