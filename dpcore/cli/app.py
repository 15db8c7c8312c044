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
  for it, anything else gets 401 (WebSocket: 403); with it, a signed cookie lets the browser in.  The app is told
  (``DPCORE_SHARED``) and says on every page that it is shared.

The app is found beside the package: ``dpcore/_app/app.py`` in an installed wheel (``pyproject.toml`` ships
``app.py``, ``pages/``, ``ui/`` and ``.streamlit/`` there), else ``app.py`` of the repository checkout the
package lives in.  Local mode hands over to ``streamlit run``; shared mode serves ``st.App`` with the access
check as ASGI middleware.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import html
import ipaddress
import os
import secrets
import sys
from pathlib import Path
from urllib.parse import parse_qs, quote

from ..errors import DPCoreError

#: The environment variable holding the shared-mode password (set by the operator).
PASSWORD_ENV = "DPCORE_SHARED_PASSWORD"
#: Set for the app's process in shared mode: "host:port" it is served on (the app says it is shared).
SHARED_ENV = "DPCORE_SHARED"
#: A password shorter than this is refused: it would be guessed over the network.
MIN_PASSWORD_LENGTH = 8
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8501
LOGIN_PATH = "/_dpcore/login"
COOKIE = "dpcore_shared"
#: Seconds a wrong password waits before its answer (slows guessing down; per request).
WRONG_PASSWORD_DELAY = 1.0
#: Largest login form body read (bytes): the form has two short fields.
MAX_LOGIN_BODY = 8192


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
        print(f"app: {app_dir / 'app.py'}\nserving: {where}")
        return 0
    if shared:
        assert password is not None
        return serve_shared(app_dir, host, port, password, options)
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
    """Hand over to ``streamlit run`` on a loopback address (this process becomes the server)."""
    _app_environment(app_dir)
    os.environ.pop(SHARED_ENV, None)
    argv = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_dir / "app.py"),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        options.pop("server.headless", "true"),
    ]
    for key, value in options.items():
        argv += [f"--{key}", value]
    sys.stdout.flush()
    os.execv(sys.executable, argv)
    return 0  # not reached


def serve_shared(app_dir: Path, host: str, port: int, password: str, options: dict[str, str]) -> int:
    """Serve ``st.App`` on ``host`` with :class:`SharedAccess` in front of every request."""
    _app_environment(app_dir)
    os.environ[SHARED_ENV] = f"{host}:{port}"
    os.environ.pop(PASSWORD_ENV, None)  # the app's pages never need it
    import streamlit as st
    from starlette.middleware import Middleware

    config = {"server.address": host, "server.port": port, "server.headless": True}
    for key, value in options.items():
        config[key] = _config_value(value)
    app = st.App(str(app_dir / "app.py"), middleware=[Middleware(SharedAccess, password=password)])
    print(f"dpcore app: shared on {host}:{port}; visitors must enter the password set by the operator.", flush=True)
    app.run(config=config)
    return 0


def _config_value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


# ------------------------------------------------------------------ the access check (ASGI middleware)
class SharedAccess:
    """Lets a request through only with the password (HTTP Basic) or the cookie a correct login sets.

    The cookie is an HMAC of a secret drawn when the server starts: it proves a past login to this server
    process and is worthless after a restart or to anyone who never logged in."""

    def __init__(self, app, password: str) -> None:
        self.app = app
        self._password = password.encode()
        self._secret = secrets.token_bytes(32)
        self._token = hmac.new(self._secret, b"dpcore shared session", hashlib.sha256).hexdigest()

    async def __call__(self, scope, receive, send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.authorised(scope):
            await self.app(scope, receive, send)
            return
        if kind == "websocket":
            # closing before accepting makes the server answer the handshake with 403
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope.get("path") == LOGIN_PATH and scope.get("method") == "POST":
            await self._login(scope, receive, send)
            return
        await self._ask(scope, send, wrong=False)

    def authorised(self, scope) -> bool:
        headers = _headers(scope)
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(value.encode(), self._token.encode()):
                return True
        auth = headers.get("authorization", "")
        if auth[:6].lower() == "basic ":
            try:
                _user, _, given = base64.b64decode(auth[6:].strip(), validate=True).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return False
            return hmac.compare_digest(given.encode(), self._password)
        return False

    async def _login(self, scope, receive, send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_LOGIN_BODY:
                await _respond(send, 413, b"Too large.", "text/plain; charset=utf-8")
                return
            if not message.get("more_body"):
                break
        form = parse_qs(body.decode("utf-8", "replace"))
        given = (form.get("password") or [""])[0]
        target = _local_path((form.get("next") or ["/"])[0])
        if hmac.compare_digest(given.encode(), self._password):
            cookie = f"{COOKIE}={self._token}; Path=/; HttpOnly; SameSite=Strict"
            await _respond(
                send, 303, b"", "text/plain", [(b"location", target.encode()), (b"set-cookie", cookie.encode())]
            )
            return
        import asyncio

        await asyncio.sleep(WRONG_PASSWORD_DELAY)
        await self._ask(scope, send, wrong=True, target=target)

    async def _ask(self, scope, send, *, wrong: bool, target: str | None = None) -> None:
        accept = _headers(scope).get("accept", "")
        extra = [(b"www-authenticate", b'Basic realm="dpcore (shared)", charset="UTF-8"')]
        if "text/html" not in accept and scope.get("method") != "POST":
            await _respond(send, 401, b"This dpcore app is shared: a password is required.\n", "text/plain", extra)
            return
        if target is None:
            query = scope.get("query_string", b"").decode("latin-1")
            target = _local_path(scope.get("path", "/") + (f"?{query}" if query else ""))
        page = LOGIN_PAGE.format(
            note="<p class=wrong>That password is not right.</p>" if wrong else "",
            action=LOGIN_PATH,
            target=html.escape(target, quote=True),
        )
        # no WWW-Authenticate here: the browser shows the form instead of its own dialog
        await _respond(send, 401, page.encode(), "text/html; charset=utf-8")


def _headers(scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _local_path(target: str) -> str:
    """A redirect target on this server only (never another host: no open redirect)."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return quote(target, safe="/?=&%:@-._~+,;")


async def _respond(send, status: int, body: bytes, content_type: str, headers=None) -> None:
    head = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *(headers or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dpcore — shared workbench</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}}
input{{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box;margin:.5rem 0}}
button{{font-size:1rem;padding:.4rem 1rem;background:#1f5f99;color:#fff;border:0;border-radius:4px}}
.wrong{{color:#a00}}</style></head>
<body><h1>This workbench is shared</h1>
<p>The operator of this dpcore app has made it reachable from the network. It holds a private table and a
privacy budget that every visitor's runs spend, so it asks for the password the operator gave you.</p>
{note}<form method="post" action="{action}"><label>Password
<input type="password" name="password" autocomplete="current-password" autofocus required></label>
<input type="hidden" name="next" value="{target}"><button type="submit">Enter</button></form></body></html>
"""


if __name__ == "__main__":
    sys.exit(main())
