"""Serve the app to the network with a password: ``python -m ui.serve --host H --port P [--server.X V ...]``.

Started by ``dpcore app --host ...`` (never directly): the operator's password arrives in the environment
(``DPCORE_SHARED_PASSWORD``) and is removed from it before any page runs.  Every HTTP request and every WebSocket
handshake passes :class:`SharedAccess` first: without the password a browser gets a page that says the app is
shared and asks for it, anything else gets 401 (WebSocket: 403); with it, a session cookie lets the browser in.

* **Every password check is rate-limited** (:class:`PasswordGate`), the login form and HTTP Basic alike: a
  wrong password is answered after a pause, and past a few wrong ones in a row an address (and, over all
  addresses, the server) must wait longer and longer before a password is even checked again (429).
* **Sessions** (:class:`Sessions`): each login gets its own random token, held in this process's memory only
  (a restart logs everyone out), ended after SESSION_IDLE seconds unused or SESSION_LIFETIME after the login.
  The cookie is ``HttpOnly``, ``SameSite=Strict``, and ``Secure`` when the app is served over HTTPS (Streamlit's
  own TLS, a proxy on this machine that says so, or the operator's ``--secure-cookie``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import html
import ipaddress
import math
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote

PASSWORD_ENV = "DPCORE_SHARED_PASSWORD"
SHARED_ENV = "DPCORE_SHARED"
LOGIN_PATH = "/_dpcore/login"
COOKIE = "dpcore_shared"
#: A login session ends after this many seconds without a request, or this many after the login.
SESSION_IDLE = 12 * 3600
SESSION_LIFETIME = 24 * 3600
#: Sessions held at once (each is a login with the right password); past it the least recently used ends.
MAX_SESSIONS = 10_000
#: Largest login form body read (bytes): the form has two short fields.
MAX_LOGIN_BODY = 8192
APP_DIR = Path(__file__).resolve().parent.parent
LOOPBACK = ("127.0.0.1", "localhost", "::1")

Clock = Callable[[], float]


def serve_shared(
    app_dir: Path, host: str, port: int, password: str, options: dict[str, str], secure_cookie: bool = False
) -> int:
    """Serve ``st.App`` on ``host`` with :class:`SharedAccess` in front of every request.  ``secure_cookie``: the
    operator says browsers reach the app over HTTPS (a TLS proxy in front), so the session cookie is ``Secure``."""
    os.environ[SHARED_ENV] = f"{host}:{port}"
    from starlette.middleware import Middleware

    secure_cookie = secure_cookie or bool(options.get("server.sslCertFile"))  # Streamlit serves TLS itself
    app = _app(app_dir, middleware=[Middleware(SharedAccess, password=password, secure_cookie=secure_cookie)])
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


# ------------------------------------------------------------------ the password check, rate-limited
@dataclass(frozen=True)
class Backoff:
    """How wrong passwords slow guessing down; one rule for the login form and for HTTP Basic.

    Every wrong password is answered after ``pause`` seconds.  After more than ``free`` wrong passwords in a row
    from one address, that address must wait before its next password is even checked: ``first`` seconds,
    doubling with every further wrong one, at most ``longest``; a password sent during the wait is refused
    unchecked (429, with Retry-After).  The same count runs over all addresses together with ``global_free``
    and ``global_longest``: it bounds guessing spread over many addresses.  A right password clears its
    address's count (never the global one); a count is forgotten ``forget`` seconds after its last failure.

    With the defaults one address gets 4 guesses in a row, then waits 2 s, 4 s, ... doubling up to 5 minutes
    (from the 12th wrong one on): under 300 guesses a day.  All addresses together: 20, then waits doubling up to
    one minute: under 1,500 a day however many addresses guess."""

    pause: float = 1.0
    free: int = 3
    first: float = 2.0
    longest: float = 300.0
    global_free: int = 20
    global_longest: float = 60.0
    forget: float = 3600.0

    def wait(self, failures: int, *, overall: bool = False) -> float:
        """Seconds to wait after the ``failures``-th wrong password in a row."""
        free, longest = (self.global_free, self.global_longest) if overall else (self.free, self.longest)
        if failures <= free:
            return 0.0
        return min(self.first * 2.0 ** min(failures - free - 1, 62), longest)


@dataclass
class _Failures:
    count: int = 0
    last: float = 0.0  # when the last wrong password was checked
    until: float = 0.0  # no password is checked before this time


@dataclass(frozen=True)
class Verdict:
    """What a password check found: "right", "wrong", or "wait" (not checked; ``retry_after`` seconds)."""

    outcome: str
    retry_after: float = 0.0


class PasswordGate:
    """Every password check of a shared server goes through :meth:`check`: constant-time, rate-limited per client
    address and over all addresses (:class:`Backoff`).  State is in memory, for this server process."""

    #: Failure counts kept at once (addresses); past it the longest-forgotten go (the global count still holds).
    MAX_ADDRESSES = 10_000

    def __init__(self, password: str, backoff: Backoff | None = None, clock: Clock = time.monotonic) -> None:
        self._digest = hashlib.sha256(password.encode()).digest()
        self.backoff = backoff or Backoff()
        self._clock = clock
        self._by_address: dict[str, _Failures] = {}
        self._overall = _Failures()

    def check(self, address: str, given: str) -> Verdict:
        now = self._clock()
        mine = self._current(self._by_address.get(address), now)
        overall = self._current(self._overall, now)
        wait = max(mine.until, overall.until) - now
        if wait > 0:
            return Verdict("wait", wait)
        # both sides hashed first: the comparison takes the same time whatever the lengths
        if hmac.compare_digest(hashlib.sha256(given.encode()).digest(), self._digest):
            self._by_address.pop(address, None)
            return Verdict("right")
        self._fail(mine, now, overall=False)
        self._fail(overall, now, overall=True)
        self._by_address[address] = mine
        self._overall = overall
        if len(self._by_address) > self.MAX_ADDRESSES:
            self._prune(now)
        return Verdict("wrong", mine.until - now)

    def failures(self, address: str) -> int:
        """Wrong passwords in a row from ``address`` that still count."""
        return self._current(self._by_address.get(address), self._clock()).count

    def failures_overall(self) -> int:
        """Wrong passwords from all addresses that still count."""
        return self._current(self._overall, self._clock()).count

    def _current(self, entry: _Failures | None, now: float) -> _Failures:
        if entry is None or (now - entry.last >= self.backoff.forget and now >= entry.until):
            return _Failures()
        return entry

    def _fail(self, entry: _Failures, now: float, *, overall: bool) -> None:
        entry.count += 1
        entry.last = now
        entry.until = now + self.backoff.wait(entry.count, overall=overall)

    def _prune(self, now: float) -> None:
        kept = {a: f for a, f in self._by_address.items() if self._current(f, now) is f}
        if len(kept) > self.MAX_ADDRESSES:
            kept = dict(sorted(kept.items(), key=lambda item: item[1].last)[-self.MAX_ADDRESSES :])
        self._by_address = kept


# ------------------------------------------------------------------ login sessions
class Sessions:
    """Login sessions in this server process's memory: a random token per login (``secrets.token_urlsafe``),
    ended ``idle`` seconds after its last request or ``lifetime`` seconds after the login, whichever comes first.
    Only a digest of each token is kept (a look-up reveals nothing through its timing)."""

    def __init__(
        self,
        idle: float = SESSION_IDLE,
        lifetime: float = SESSION_LIFETIME,
        clock: Clock = time.monotonic,
        limit: int = MAX_SESSIONS,
    ) -> None:
        self.idle = idle
        self.lifetime = lifetime
        self._clock = clock
        self._limit = limit
        self._held: dict[bytes, list[float]] = {}  # digest -> [login time, last request]

    def open(self) -> str:
        """A new session's token (the cookie's value)."""
        now = self._clock()
        self._held = {k: v for k, v in self._held.items() if self._alive(v, now)}
        while len(self._held) >= self._limit:
            del self._held[min(self._held, key=lambda k: self._held[k][1])]
        token = secrets.token_urlsafe(32)
        self._held[_digest(token)] = [now, now]
        return token

    def valid(self, token: str) -> bool:
        """Whether ``token`` is a live session (it then counts as used now)."""
        key = _digest(token)
        times = self._held.get(key)
        if times is None:
            return False
        now = self._clock()
        if not self._alive(times, now):
            del self._held[key]
            return False
        times[1] = now
        return True

    def end(self, token: str) -> None:
        self._held.pop(_digest(token), None)

    def __len__(self) -> int:
        return len(self._held)

    def _alive(self, times: list[float], now: float) -> bool:
        return now - times[0] < self.lifetime and now - times[1] < self.idle


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()


# ------------------------------------------------------------------ the access check (ASGI middleware)
class SharedAccess:
    """Lets a request through only with a live session cookie (set by a right password on the login form) or the
    password itself (HTTP Basic); every password goes through one :class:`PasswordGate`."""

    def __init__(
        self,
        app,
        password: str,
        *,
        secure_cookie: bool = False,
        backoff: Backoff | None = None,
        sessions: Sessions | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.app = app
        self.gate = PasswordGate(password, backoff, clock)
        self.sessions = sessions if sessions is not None else Sessions(clock=clock)
        self.secure_cookie = secure_cookie

    async def __call__(self, scope, receive, send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if self._has_session(headers):
            await self.app(scope, receive, send)
            return
        given = _basic_password(headers)
        if given is not None:
            verdict = await self._check(scope, given)
            if verdict.outcome == "right":
                await self.app(scope, receive, send)
            elif kind == "websocket":
                await _close_websocket(send)
            elif verdict.outcome == "wait":
                await _too_many(send, verdict)
            else:
                await self._ask(scope, send, wrong=True)
            return
        if kind == "websocket":
            await _close_websocket(send)
            return
        if scope.get("path") == LOGIN_PATH and scope.get("method") == "POST":
            await self._login(scope, receive, send)
            return
        await self._ask(scope, send, wrong=False)

    def _has_session(self, headers: dict[str, str]) -> bool:
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and value and self.sessions.valid(value):
                return True
        return False

    async def _check(self, scope, given: str) -> Verdict:
        """The gate's verdict; a wrong password's answer waits the pause (the count is already raised)."""
        address = client_address(scope)
        verdict = self.gate.check(address, given)
        if verdict.outcome == "wrong":  # logged: the operator sees guessing (at most what the gate lets through)
            print(
                f"dpcore app: wrong password from {address} ({self.gate.failures(address)} in a row from there, "
                f"{self.gate.failures_overall()} on this server; its next is checked in {verdict.retry_after:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
            await asyncio.sleep(self.gate.backoff.pause)
        return verdict

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
        verdict = await self._check(scope, given)
        if verdict.outcome == "right":
            cookie = f"{COOKIE}={self.sessions.open()}; Path=/; Max-Age={int(self.sessions.lifetime)}; HttpOnly; "
            cookie += "SameSite=Strict" + ("; Secure" if self._secure(scope) else "")
            await _respond(
                send, 303, b"", "text/plain", [(b"location", target.encode()), (b"set-cookie", cookie.encode())]
            )
            return
        await self._ask(scope, send, wrong=True, target=target, wait=verdict if verdict.outcome == "wait" else None)

    def _secure(self, scope) -> bool:
        # "https" when Streamlit serves TLS itself, or a proxy on this machine says so (X-Forwarded-Proto, which
        # uvicorn trusts from 127.0.0.1 only); otherwise only the operator knows (--secure-cookie)
        return self.secure_cookie or scope.get("scheme") in ("https", "wss")

    async def _ask(
        self,
        scope,
        send,
        *,
        wrong: bool,
        target: str | None = None,
        wait: Verdict | None = None,
    ) -> None:
        accept = _headers(scope).get("accept", "")
        extra = [(b"www-authenticate", b'Basic realm="dpcore (shared)", charset="UTF-8"')]
        if "text/html" not in accept and scope.get("method") != "POST":
            text = (
                b"That password is not right.\n" if wrong else b"This dpcore app is shared: a password is required.\n"
            )
            await _respond(send, 401, text, "text/plain", extra)
            return
        if target is None:
            query = scope.get("query_string", b"").decode("latin-1")
            target = _local_path(scope.get("path", "/") + (f"?{query}" if query else ""))
        if wait is not None:
            note = f"<p class=wrong>Too many wrong passwords: wait {_seconds(wait)} seconds, then try again.</p>"
        elif wrong:
            note = "<p class=wrong>That password is not right.</p>"
        else:
            note = ""
        page = LOGIN_PAGE.format(note=note, action=LOGIN_PATH, target=html.escape(target, quote=True))
        if wait is not None:
            headers = [(b"retry-after", str(_seconds(wait)).encode())]
            await _respond(send, 429, page.encode(), "text/html; charset=utf-8", headers)
            return
        # no WWW-Authenticate here: the browser shows the form instead of its own dialog
        await _respond(send, 401, page.encode(), "text/html; charset=utf-8")


def client_address(scope) -> str:
    """The key a client's wrong passwords are counted under: its IP address (an IPv6 one by its /64 network, which
    one host usually holds whole).  Behind a proxy on this machine uvicorn puts the forwarded address here."""
    host = (scope.get("client") or ("unknown", 0))[0]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return str(host)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _basic_password(headers: dict[str, str]) -> str | None:
    """The password of an HTTP Basic ``Authorization`` header (None without one, or when it cannot be read)."""
    auth = headers.get("authorization", "")
    if auth[:6].lower() != "basic ":
        return None
    try:
        _user, _, given = base64.b64decode(auth[6:].strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return given


def _seconds(verdict: Verdict) -> int:
    return max(1, math.ceil(verdict.retry_after))


async def _too_many(send, verdict: Verdict) -> None:
    body = f"Too many wrong passwords: wait {_seconds(verdict)} seconds, then try again.\n".encode()
    await _respond(send, 429, body, "text/plain", [(b"retry-after", str(_seconds(verdict)).encode())])


async def _close_websocket(send) -> None:
    # closing before accepting makes the server answer the handshake with 403
    await send({"type": "websocket.close", "code": 1008})


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
    p.add_argument(
        "--secure-cookie", action="store_true", help="browsers reach the app over HTTPS: the session cookie is Secure"
    )
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
    return serve_shared(APP_DIR, args.host, args.port, password, options, secure_cookie=args.secure_cookie)


if __name__ == "__main__":
    sys.exit(main())
