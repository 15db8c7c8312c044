"""Serve the app to the network with a password: ``python -m ui.serve --host H --port P [--server.X V ...]``.

Started by ``dpcore app --host ...`` (never directly): the operator's password arrives in the environment
(``DPCORE_SHARED_PASSWORD``) and is removed from it before any page runs.  Every HTTP request and every WebSocket
handshake passes :class:`SharedAccess` first: without the password a browser gets a page that says the app is
shared and asks for it, anything else gets 401 (WebSocket: 403); with it, a signed cookie lets the browser in.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import html
import os
import secrets
import sys
from pathlib import Path
from urllib.parse import parse_qs, quote

PASSWORD_ENV = "DPCORE_SHARED_PASSWORD"
SHARED_ENV = "DPCORE_SHARED"
LOGIN_PATH = "/_dpcore/login"
COOKIE = "dpcore_shared"
#: Seconds a wrong password waits before its answer (slows guessing down; per request).
WRONG_PASSWORD_DELAY = 1.0
#: Largest login form body read (bytes): the form has two short fields.
MAX_LOGIN_BODY = 8192
APP_DIR = Path(__file__).resolve().parent.parent
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve_shared(app_dir: Path, host: str, port: int, password: str, options: dict[str, str]) -> int:
    """Serve ``st.App`` on ``host`` with :class:`SharedAccess` in front of every request."""
    os.environ[SHARED_ENV] = f"{host}:{port}"
    from starlette.middleware import Middleware

    app = _app(app_dir, middleware=[Middleware(SharedAccess, password=password)])
    print(f"dpcore app: shared on {host}:{port}; visitors must enter the password set by the operator.", flush=True)
    app.run(config=_config(host, port, options))
    return 0


def serve_local(app_dir: Path, host: str, port: int, options: dict[str, str]) -> int:
    """Serve ``st.App`` on a loopback address, no password (this machine only)."""
    os.environ.pop(SHARED_ENV, None)
    app = _app(app_dir, middleware=[])
    app.run(config=_config(host, port, options))
    return 0


def _app(app_dir: Path, middleware: list):
    """The app with the file-streaming route of :mod:`ui.downloads` (its secret drawn for this process)."""
    import streamlit as st

    from ui import downloads

    os.environ[downloads.SECRET_ENV] = secrets.token_hex(32)
    return st.App(str(app_dir / "app.py"), middleware=middleware, routes=downloads.routes())


def _config(host: str, port: int, options: dict[str, str]) -> dict:
    config = {"server.address": host, "server.port": port, "server.headless": True}
    for key, value in options.items():
        config[key] = _config_value(value)
    return config


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ui.serve")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--local", action="store_true", help="this machine only (a loopback address), no password")
    args, extra = p.parse_known_args(argv)
    options = {}
    for i in range(0, len(extra) - 1, 2):
        options[extra[i].lstrip("-")] = extra[i + 1]
    if args.local:
        if args.host not in LOOPBACK:
            print(f"error: --local serves a loopback address ({', '.join(LOOPBACK)}), not {args.host}", file=sys.stderr)
            return 2
        return serve_local(APP_DIR, args.host, args.port, options)
    password = os.environ.pop(PASSWORD_ENV, "")  # the pages never see it
    if not password:
        print("error: start a shared server with `dpcore app --host ...` (it asks for the password)", file=sys.stderr)
        return 2
    return serve_shared(APP_DIR, args.host, args.port, password, options)


if __name__ == "__main__":
    sys.exit(main())
