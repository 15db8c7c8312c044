"""``dpcore app``: start the Streamlit app, bound to this machine unless the operator shares it with a password.

The app holds a private table and a privacy budget that any visitor could spend, so who can reach it is a
privacy decision, not a convenience:

* **Local (the default).**  The server listens on 127.0.0.1 only: nothing on the network can connect, and no
  password is asked.  Any loopback address (``127.0.0.0/8``, ``::1``, ``localhost``) counts as local.
* **Shared (an explicit choice).**  ``--host`` with any other address (``0.0.0.0`` for every interface) serves
  the app to the network, and is refused unless the operator sets a password: the environment variable
  ``DPCORE_SHARED_PASSWORD`` or ``--password-file FILE`` (never a command-line value: other users of the
  machine can read a process's arguments).  Every HTTP request and every WebSocket handshake then passes
  :class:`SharedAccess` first: without the password a browser gets a page that says the app is shared and asks
  for it, anything else gets 401 (WebSocket: 403); with it, a session cookie lets the browser in.  Every password
  check (the form and HTTP Basic) is rate-limited per address and over all addresses; sessions are random per
  login and expire; the cookie is ``Secure`` over HTTPS, or with ``--secure-cookie`` when a TLS proxy stands in
  front (``ui/serve.py`` has the rules).  The app is told (``DPCORE_SHARED``) and says on every page that it is
  shared.

The app is found beside the package: ``dpcore/_app/app.py`` in an installed wheel (``pyproject.toml`` ships
``app.py``, ``pages/``, ``ui/`` and ``.streamlit/`` there), else ``app.py`` of the repository checkout the
package lives in.  Both modes hand over to the app's own server, ``ui/serve.py``: ``st.App`` with the route that
streams large released files from disk (``ui/downloads.py``); shared mode adds the password check as ASGI
middleware in front of every request (the engine never imports Streamlit).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path

from ..errors import DPCoreError

#: The environment variable holding the shared-mode password (set by the operator).
PASSWORD_ENV = "DPCORE_SHARED_PASSWORD"
#: Set for the app's process in shared mode: "host:port" it is served on (the app says it is shared).
SHARED_ENV = "DPCORE_SHARED"
#: A password shorter than this is refused: it would be guessed over the network.
MIN_PASSWORD_LENGTH = 8
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8501


class ServeError(DPCoreError):
    """The app cannot be served as asked (no password for a shared server, app files missing)."""


DESCRIPTION = (
    "Start the Streamlit app. It listens on 127.0.0.1 unless --host names another address; serving beyond this "
    f"machine requires a password in ${PASSWORD_ENV} or --password-file. Options of `streamlit run` go after "
    "`--` (dpcore app -- --server.maxUploadSize 500)."
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "app", help="start the web app (on this machine only, unless shared with a password)", description=DESCRIPTION
    )
    _arguments(p)
    p.add_argument("streamlit_options", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        default=None,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; 0.0.0.0 = every interface, "
        "which needs a password)",
    )
    p.add_argument("--port", type=int, default=None, help=f"port (default {DEFAULT_PORT})")
    p.add_argument(
        "--workspace",
        default=None,
        help="workspace folder (runs, ledger); default $DPCORE_WORKSPACE, else the per-user data folder",
    )
    p.add_argument(
        "--password-file",
        default=None,
        help=f"file whose first line is the password of a shared server (else ${PASSWORD_ENV})",
    )
    p.add_argument(
        "--secure-cookie",
        action="store_true",
        help="shared mode behind an HTTPS proxy: mark the session cookie Secure (browsers then send it over HTTPS "
        "only; on plain http nobody could log in)",
    )
    p.add_argument("--app-dir", default=None, help="folder holding app.py, pages/ and ui/ (default: found)")
    p.add_argument(
        "--dry-run", action="store_true", help="print what would be started (binding, password or not) and exit"
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m dpcore.cli.app`` (what ./run.sh calls): like ``dpcore app``, and Streamlit options such as
    ``--server.port 8600`` need no ``--`` before them."""
    p = argparse.ArgumentParser(prog="dpcore app", description=DESCRIPTION)
    _arguments(p)
    args, extra = p.parse_known_args(argv)
    args.streamlit_options = extra
    try:
        return run(args)
    except DPCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args) -> int:
    extra = list(getattr(args, "streamlit_options", None) or [])
    if extra[:1] == ["--"]:
        extra = extra[1:]
    options = _streamlit_options(extra)
    host = args.host or options.pop("server.address", None) or DEFAULT_HOST
    options.pop("server.address", None)
    port = args.port or int(options.pop("server.port", DEFAULT_PORT))
    options.pop("server.port", None)
    if not 0 < port < 65536:
        raise ServeError(f"--port must be between 1 and 65535 (got {port}).")
    app_dir = Path(args.app_dir).resolve() if args.app_dir else find_app_dir()
    check_app_dir(app_dir)
    shared = not is_loopback(host)
    password = read_password(args.password_file) if shared else None
    if args.workspace:
        os.environ["DPCORE_WORKSPACE"] = str(Path(args.workspace).resolve())
    if args.dry_run:
        where = f"shared on {host}:{port}, password required" if shared else f"this machine only ({host}:{port})"
        if shared and getattr(args, "secure_cookie", False):
            where += ", Secure session cookie (HTTPS only)"
        print(f"app: {app_dir / 'app.py'}\nserving: {where}")
        return 0
    if shared:
        assert password is not None
        return serve_shared(app_dir, host, port, password, options, getattr(args, "secure_cookie", False))
    return serve_local(app_dir, host, port, options)


# ------------------------------------------------------------------ binding rules
def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    h = host.strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface, so it is treated as shared


def read_password(path: str | None) -> str:
    """The shared-mode password (file first, then the environment); refused when missing or short."""
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ServeError(f"Cannot read the password file {path}: {exc.strerror}.") from None
        password = (text.splitlines() or [""])[0].strip()
    else:
        password = os.environ.get(PASSWORD_ENV, "")
    if not password:
        raise ServeError(
            "Serving beyond this machine needs a password: the app holds a private table and a privacy budget "
            f"anyone who reaches it could spend. Set {PASSWORD_ENV} (or --password-file FILE) and start again, or "
            f"leave --host out to serve on {DEFAULT_HOST} only."
        )
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ServeError(
            f"The shared-mode password must have at least {MIN_PASSWORD_LENGTH} characters (it has {len(password)})."
        )
    return password


# ------------------------------------------------------------------ where the app is
def find_app_dir() -> Path:
    """``dpcore/_app`` of an installed wheel, else the repository checkout the package lives in."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_app", package.parent):
        if (candidate / "app.py").is_file() and (candidate / "ui").is_dir() and (candidate / "pages").is_dir():
            return candidate
    raise ServeError(
        f"The app files (app.py, pages/, ui/) are neither in {package / '_app'} (an installed wheel) nor beside "
        f"the package in {package.parent} (a checkout). Reinstall dpcore, or pass --app-dir."
    )


def check_app_dir(app_dir: Path) -> None:
    missing = [name for name in ("app.py", "pages", "ui") if not (app_dir / name).exists()]
    if missing:
        raise ServeError(f"{app_dir} is not the app's folder: {', '.join(missing)} missing.")


def _streamlit_options(extra: list[str]) -> dict[str, str]:
    """``--server.port 8600`` / ``--server.port=8600`` pairs passed on to Streamlit, as a dict."""
    out: dict[str, str] = {}
    i = 0
    while i < len(extra):
        arg = extra[i]
        if not arg.startswith("--") or "." not in arg:
            raise ServeError(f"Unknown option {arg!r}: dpcore app passes on Streamlit options such as --server.port.")
        if "=" in arg:
            key, value = arg[2:].split("=", 1)
        else:
            if i + 1 >= len(extra):
                raise ServeError(f"The option {arg} needs a value.")
            key, value = arg[2:], extra[i + 1]
            i += 1
        out[key] = value
        i += 1
    return out


def _app_environment(app_dir: Path) -> None:
    # the app imports `ui` and `pages` from its own folder (in a wheel: dpcore/_app), never from site-packages
    os.chdir(app_dir)
    if str(app_dir) not in sys.path:
        sys.path.insert(0, str(app_dir))
    path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(app_dir) + (os.pathsep + path if path else "")


def serve_local(app_dir: Path, host: str, port: int, options: dict[str, str]) -> int:
    """Hand over to the app's own server on a loopback address (``ui/serve.py --local``: ``st.App`` with the
    route that streams large released files from disk; no password).  This process becomes the server."""
    _app_environment(app_dir)
    os.environ.pop(SHARED_ENV, None)
    argv = [sys.executable, "-m", "ui.serve", "--local", "--host", host, "--port", str(port)]
    argv += ["--server.headless", options.pop("server.headless", "true")]
    for key, value in options.items():
        argv += [f"--{key}", value]
    sys.stdout.flush()
    os.execv(sys.executable, argv)
    return 0  # not reached


def serve_shared(
    app_dir: Path, host: str, port: int, password: str, options: dict[str, str], secure_cookie: bool = False
) -> int:
    """Hand over to the app's own server (``ui/serve.py``: ``st.App`` with the access check in front of every
    request).  The engine never imports Streamlit; the password reaches that process through its environment
    only, and it removes it before any page runs.  ``secure_cookie``: browsers reach the app over HTTPS."""
    _app_environment(app_dir)
    os.environ[SHARED_ENV] = f"{host}:{port}"
    os.environ[PASSWORD_ENV] = password
    argv = [sys.executable, "-m", "ui.serve", "--host", host, "--port", str(port)]
    if secure_cookie:
        argv.append("--secure-cookie")
    for key, value in options.items():
        argv += [f"--{key}", value]
    sys.stdout.flush()
    os.execv(sys.executable, argv)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
