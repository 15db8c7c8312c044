"""Shared mode's access rules, in-process: the rate-limited password check, login sessions, download links.

The middleware (:class:`ui.serve.SharedAccess`) is driven as the server drives it, one ASGI call per request, with
an injected clock and a small back-off schedule, so expiry and lock-outs are checked without waiting for them.
tests/test_serve.py checks the same rules on a real server.
"""

from __future__ import annotations

import asyncio
import base64
import time
import urllib.parse

import pytest

from ui import downloads, serve

PASSWORD = "correct horse battery"
ALICE = ("203.0.113.5", 50000)
MALLORY = ("198.51.100.9", 50001)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _middleware(clock: Clock, backoff: serve.Backoff | None = None, **kwargs) -> serve.SharedAccess:
    async def app(scope, receive, send):  # stands for the Streamlit app: answers 200 "app"
        if scope["type"] == "websocket":
            await send({"type": "websocket.accept"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"app"})

    backoff = backoff or serve.Backoff(pause=0.0, free=1, first=10.0, longest=40.0, global_free=50)
    return serve.SharedAccess(app, PASSWORD, backoff=backoff, clock=clock, **kwargs)


def _request(
    mw,
    *,
    path: str = "/",
    method: str = "GET",
    headers: dict | None = None,
    body: bytes = b"",
    client=ALICE,
    kind: str = "http",
    scheme: str = "http",
) -> tuple[int, dict[str, str], str]:
    """One request through the middleware: (status, headers, body); a refused WebSocket handshake is 403."""
    scope = {
        "type": kind,
        "path": path,
        "method": method,
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()],
        "query_string": b"",
        "client": client,
        "scheme": scheme,
    }
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(mw(scope, receive, send))
    if kind == "websocket":
        return (101 if sent[0]["type"] == "websocket.accept" else 403), {}, ""
    start = sent[0]
    head = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], head, b"".join(m.get("body", b"") for m in sent[1:]).decode()


def _basic(password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"anyone:{password}".encode()).decode()}


def _login(mw, password: str = PASSWORD, client=ALICE, scheme: str = "http") -> tuple[int, dict[str, str], str]:
    form = urllib.parse.urlencode({"password": password, "next": "/results"}).encode()
    return _request(mw, path=serve.LOGIN_PATH, method="POST", body=form, client=client, scheme=scheme)


def _cookie(headers: dict[str, str]) -> str:
    return headers["set-cookie"].split(";")[0]


# ------------------------------------------------------------------ the password check is rate-limited
def test_wrong_basic_passwords_are_slowed_then_refused_unchecked():
    clock = Clock()
    pause = 0.05
    mw = _middleware(clock, serve.Backoff(pause=pause, free=1, first=10.0, longest=40.0, global_free=50))
    t0 = time.monotonic()
    answers = [_request(mw, path="/_stcore/health", headers=_basic(f"guess{i}")) for i in range(5)]
    elapsed = time.monotonic() - t0
    statuses = [status for status, _, _ in answers]
    # two are checked (each answered after the pause), then the address waits 10 s: the rest are not checked
    assert statuses == [401, 401, 429, 429, 429]
    assert elapsed >= 2 * pause
    assert all(head["retry-after"] == "10" for _, head, _ in answers[2:])
    assert mw.gate.failures(serve.client_address({"client": ALICE})) == 2
    # during the wait even the right password is not checked: a lock-out an attacker cannot probe around
    assert _request(mw, path="/_stcore/health", headers=_basic(PASSWORD))[0] == 429
    assert _request(mw, kind="websocket", headers=_basic(PASSWORD))[0] == 403
    # another address is not locked out by this one
    assert _request(mw, path="/_stcore/health", headers=_basic(PASSWORD), client=MALLORY)[0] == 200
    # once the wait is over the right password gets in and clears the count
    clock.now += 10
    assert _request(mw, path="/_stcore/health", headers=_basic(PASSWORD))[0] == 200
    assert mw.gate.failures(serve.client_address({"client": ALICE})) == 0


def test_the_waits_grow_and_the_form_and_basic_share_one_count():
    clock = Clock()
    mw = _middleware(clock)  # free=1, first=10, doubling up to 40
    waits = []
    for i in range(5):
        # alternate the two paths: the login form and HTTP Basic count against the same address
        if i % 2:
            status, _, _ = _request(mw, headers=_basic(f"guess{i}"))
        else:
            status, _, body = _login(mw, f"guess{i}")
            assert "not right" in body
        assert status == 401
        if i == 0:
            continue  # one wrong password is free: no wait
        status, head, body = _login(mw, PASSWORD)  # the right one, too soon: refused unchecked
        assert status == 429 and "Too many wrong passwords" in body
        waits.append(int(head["retry-after"]))
        clock.now += waits[-1]
    assert waits == [10, 20, 40, 40]


def test_guessing_from_many_addresses_meets_the_global_limit():
    clock = Clock()
    mw = _middleware(clock, serve.Backoff(pause=0.0, free=3, first=5.0, global_free=4, global_longest=8.0))
    statuses = [_request(mw, headers=_basic("guess"), client=(f"192.0.2.{i}", 1000))[0] for i in range(1, 8)]
    assert statuses == [401, 401, 401, 401, 401, 429, 429]  # every address once: the global count stops them
    assert _login(mw, PASSWORD, client=("192.0.2.200", 1))[0] == 429
    clock.now += 5
    assert _login(mw, PASSWORD, client=("192.0.2.200", 1))[0] == 303


def test_the_back_off_schedule():
    b = serve.Backoff(free=3, first=2.0, longest=300.0, global_free=20, global_longest=60.0)
    assert [b.wait(k) for k in range(1, 11)] == [0, 0, 0, 2, 4, 8, 16, 32, 64, 128]
    assert b.wait(12) == 300 and b.wait(10**6) == 300  # capped, never an overflow
    assert b.wait(20, overall=True) == 0 and b.wait(21, overall=True) == 2 and b.wait(10**6, overall=True) == 60


def test_failures_are_forgotten_after_a_quiet_hour():
    clock = Clock()
    gate = serve.PasswordGate(PASSWORD, serve.Backoff(pause=0.0, free=0, first=1.0, longest=1.0, forget=3600), clock)
    assert gate.check("a", "x").outcome == "wrong"
    clock.now += 1
    assert gate.check("a", "y").outcome == "wrong" and gate.failures("a") == 2
    clock.now += 3600
    assert gate.failures("a") == 0 and gate.failures_overall() == 0


def test_ipv6_clients_are_counted_by_their_network():
    assert serve.client_address({"client": ("2001:db8:1:2::5", 1)}) == "2001:db8:1:2::/64"
    assert serve.client_address({"client": ("2001:db8:1:2:ffff::9", 1)}) == "2001:db8:1:2::/64"
    assert serve.client_address({"client": ("203.0.113.5", 1)}) == "203.0.113.5"
    assert serve.client_address({}) == "unknown"


# ------------------------------------------------------------------ sessions
def test_each_login_gets_its_own_cookie_with_the_safe_attributes():
    mw = _middleware(Clock())
    first = _login(mw)
    second = _login(mw, client=MALLORY)
    assert first[0] == second[0] == 303 and first[1]["location"] == "/results"
    assert _cookie(first[1]) != _cookie(second[1])
    attributes = [a.strip() for a in first[1]["set-cookie"].split(";")[1:]]
    assert {"Path=/", "HttpOnly", "SameSite=Strict", f"Max-Age={serve.SESSION_LIFETIME}"} <= set(attributes)
    assert "Secure" not in attributes  # plain http (localhost, a LAN): a Secure cookie would never come back
    assert len(_cookie(first[1]).split("=", 1)[1]) >= 43  # secrets.token_urlsafe(32): 256 random bits
    for _, head, _ in (first, second):
        assert _request(mw, headers={"Cookie": _cookie(head)})[0] == 200


def test_the_cookie_is_secure_over_https_or_when_the_operator_says_so():
    assert "Secure" in _login(_middleware(Clock()), scheme="https")[1]["set-cookie"].split("; ")
    assert "Secure" in _login(_middleware(Clock(), secure_cookie=True))[1]["set-cookie"].split("; ")


def test_a_session_ends_when_idle_and_at_its_lifetime():
    clock = Clock()
    mw = _middleware(clock, sessions=serve.Sessions(idle=100.0, lifetime=250.0, clock=clock))
    cookie = {"Cookie": _cookie(_login(mw)[1])}
    clock.now += 99
    assert _request(mw, headers=cookie)[0] == 200  # used within the idle time: it lives on
    clock.now += 99
    assert _request(mw, headers=cookie)[0] == 200
    clock.now += 99  # 297 s after the login: past its lifetime although it was never idle for 100 s
    assert _request(mw, headers=cookie)[0] == 401
    assert _request(mw, headers=cookie, kind="websocket")[0] == 403
    idle = {"Cookie": _cookie(_login(mw)[1])}
    clock.now += 100
    status, _, body = _request(mw, headers={**idle, "Accept": "text/html"})
    assert status == 401 and 'type="password"' in body  # back to the login page
    assert len(mw.sessions) == 0  # ended sessions are dropped from memory


def test_a_token_this_server_never_issued_is_not_a_session():
    mw = _middleware(Clock())
    _login(mw)
    for forged in ("0" * 64, "", "a" * 43, "dpcore shared session"):
        assert _request(mw, headers={"Cookie": f"{serve.COOKIE}={forged}"})[0] == 401
        assert _request(mw, headers={"Cookie": f"{serve.COOKIE}={forged}"}, kind="websocket")[0] == 403


def test_sessions_held_are_bounded():
    clock = Clock()
    sessions = serve.Sessions(clock=clock, limit=3)
    tokens = []
    for _ in range(5):
        tokens.append(sessions.open())
        clock.now += 1
    assert len(sessions) == 3
    assert not sessions.valid(tokens[0]) and sessions.valid(tokens[-1])


# ------------------------------------------------------------------ download links
@pytest.fixture
def download_secret(monkeypatch, tmp_path):
    monkeypatch.setenv(downloads.SECRET_ENV, "k" * 64)
    monkeypatch.setenv("DPCORE_WORKSPACE", str(tmp_path / "ws"))


def _token(link: str) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["t"][0]


def test_a_download_link_expires_and_names_one_file_of_one_run(download_secret):
    t0 = 1_700_000_000.0
    link = downloads.url("run-1", "synthetic.csv", now=t0)
    token = _token(link)
    assert link.startswith(f"{downloads.PREFIX}/run-1/synthetic.csv?t=")
    assert downloads.refusal("run-1", "synthetic.csv", token, now=t0 + downloads.LINK_LIFETIME - 1) is None
    expired = downloads.refusal("run-1", "synthetic.csv", token, now=t0 + downloads.LINK_LIFETIME + 1)
    assert expired is not None and "expired" in expired
    assert "not valid" in (downloads.refusal("run-1", "internal_answers.npz", token, now=t0) or "")
    assert "not valid" in (downloads.refusal("run-2", "synthetic.csv", token, now=t0) or "")
    # moving the expiry breaks the signature
    later = f"{int(t0) + 10 * downloads.LINK_LIFETIME}-{token.split('-', 1)[1]}"
    assert "not valid" in (downloads.refusal("run-1", "synthetic.csv", later, now=t0) or "")
    for junk in ("", "0" * 64, "9" * 5000 + "-00", "١٢٣-00"):
        assert "not valid" in (downloads.refusal("run-1", "synthetic.csv", junk, now=t0) or "")


def test_the_route_refuses_an_expired_link(download_secret):
    from starlette.requests import Request

    t0 = 1_700_000_000.0
    link = downloads.url("run-1", "synthetic.csv", now=t0)

    def request(query: str) -> Request:
        return Request(
            {
                "type": "http",
                "method": "GET",
                "path": link.split("?")[0],
                "query_string": query.encode(),
                "headers": [],
                "path_params": {"run_id": "run-1", "name": "synthetic.csv"},
            }
        )

    query = link.split("?", 1)[1]
    refused = downloads.serve_file(request(query), now=t0 + downloads.LINK_LIFETIME + 1)
    assert refused.status_code == 403 and b"expired" in refused.body
    # in time, the token opens the way to the workspace (which has no such run here: 404, not 403)
    assert downloads.serve_file(request(query), now=t0 + 1).status_code == 404


# ------------------------------------------------------------------ the operator's --secure-cookie reaches the server
def test_secure_cookie_is_passed_from_dpcore_app_to_the_server(monkeypatch, tmp_path):
    from dpcore.cli import app as cli_app

    started: list[list[str]] = []
    monkeypatch.setattr(cli_app, "_app_environment", lambda app_dir: None)
    monkeypatch.setattr(cli_app.os, "execv", lambda exe, argv: started.append(argv))
    monkeypatch.setenv(cli_app.PASSWORD_ENV, PASSWORD)
    monkeypatch.delenv(cli_app.SHARED_ENV, raising=False)
    for flag in ([], ["--secure-cookie"]):
        assert cli_app.main(["--host", "0.0.0.0", "--port", "8599", *flag]) == 0
    assert "--secure-cookie" not in started[0] and "--secure-cookie" in started[1]

    shared: list[bool] = []
    monkeypatch.setattr(serve, "serve_shared", lambda *args, secure_cookie=False: shared.append(secure_cookie) or 0)
    for flag in ([], ["--secure-cookie"]):
        monkeypatch.setenv(serve.PASSWORD_ENV, PASSWORD)
        assert serve.main(["--host", "0.0.0.0", "--port", "8599", *flag]) == 0
    assert shared == [False, True]
