"""Who can reach the app: real server processes, requests from the network side of this machine.

Each test starts the server as a user would (./run.sh, ``python -m dpcore app``, ``streamlit run``), then talks
to it over TCP: plain HTTP for the password check, and Streamlit's own WebSocket protocol (the messages the
browser sends) to run the app's script and read what it shows -- no browser needed.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from dpcore.cli import app as cli_app
from ui import serve

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery"
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _network_ip() -> str | None:
    """An IPv4 address of this machine that is not loopback: 'the network side'."""
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None


def _env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (cli_app.PASSWORD_ENV, cli_app.SHARED_ENV)}
    env.update(DPCORE_WORKSPACE=str(tmp_path / "ws"), PYTHONPATH=str(ROOT), **extra)
    return env


def _listening(port: int) -> list[str]:
    return sorted(
        {c.laddr.ip for c in psutil.net_connections(kind="inet") if c.status == "LISTEN" and c.laddr.port == port}
    )


@contextmanager
def _server(argv: list[str], env: dict, port: int, cwd: Path = ROOT, timeout: float = 90.0):
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while not _listening(port):
            if proc.poll() is not None:
                raise AssertionError(f"server exited {proc.returncode}: {proc.stdout.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise AssertionError("server did not start listening")
            time.sleep(0.3)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _http(url: str, *, data: bytes | None = None, headers: dict | None = None) -> tuple[int, dict, str]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, data=data, headers=headers or {})
    deadline = time.monotonic() + 30
    while True:
        try:
            with opener.open(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode("utf-8", "replace")
        except (ConnectionError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _ws_handshake(host: str, port: int, cookie: str | None = None) -> str:
    """The status line the server answers a WebSocket handshake on the app's stream with."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET /_stcore/stream HTTP/1.1",
        f"Host: {host}:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Protocol: streamlit",
    ]
    if cookie:
        lines.append(f"Cookie: {cookie}")
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return s.recv(4096).split(b"\r\n")[0].decode()


def _run_script(host: str, port: int, cookie: str | None = None, timeout: float = 120.0) -> list[tuple[str, str]]:
    """Open a session as the browser does, ask for a script run, and return (element kind, text) it shows."""
    websockets = pytest.importorskip("websockets.sync.client")
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    shown: list[tuple[str, str]] = []
    headers = {"Cookie": cookie} if cookie else {}
    with websockets.connect(
        f"ws://{host}:{port}/_stcore/stream", subprotocols=["streamlit"], additional_headers=headers, open_timeout=30
    ) as ws:
        ws.send(BackMsg(rerun_script=ClientState(query_string="", page_name="")).SerializeToString())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = ForwardMsg()
            msg.ParseFromString(ws.recv(timeout=timeout))
            if msg.WhichOneof("type") == "script_finished":
                if msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    shown.clear()  # the script asked for a rerun: what counts is the run that follows
                    continue
                return shown
            if msg.WhichOneof("type") == "page_config_changed" and msg.page_config_changed.favicon:
                shown.append(("favicon", msg.page_config_changed.favicon))
            if msg.WhichOneof("type") == "navigation":
                shown.append(("navigation", ""))
            if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
                kind = msg.delta.new_element.WhichOneof("type") or ""
                element = getattr(msg.delta.new_element, kind, None)
                shown.append((kind, str(getattr(element, "body", "") or getattr(element, "label", ""))))
    raise AssertionError("the script run did not finish")


def _assert_page_rendered(shown):
    kinds = [k for k, _ in shown]
    assert "exception" not in kinds, shown
    assert not any("Something went wrong" in t for _, t in shown), shown
    assert ("heading", "1 · Data") in shown, shown
    _assert_icon_is_local(shown)


def _assert_icon_is_local(shown):
    """The tab icon never makes the browser fetch from the internet: an emoji (drawn as an inline SVG) or a file
    of this server, never ":material/…" (fonts.gstatic.com) or an http(s) address.  It is set before the
    navigation, whose page icons the browser would otherwise use as the tab icon (":material/…" ones)."""
    kinds = [k for k, _ in shown]
    assert "favicon" in kinds and kinds.index("favicon") < kinds.index("navigation"), shown
    for kind, icon in shown:
        if kind == "favicon":
            assert icon.startswith(("emoji:", "/media/", "data:")), icon


# ------------------------------------------------------------------ unit: the rules
def test_loopback_rule():
    for host in ("127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert cli_app.is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.0.2.7", "10.0.0.1", "myhost.example"):
        assert not cli_app.is_loopback(host), host


def test_login_redirect_stays_on_this_server():
    assert serve._local_path("/results?run=3") == "/results?run=3"
    for evil in ("//evil.example/", "https://evil.example/", "/\\evil.example", "evil"):
        assert serve._local_path(evil) == "/"


def test_a_network_address_without_a_password_is_refused(tmp_path):
    port = _free_port()
    for extra_args, env_extra in (
        (["--host", "0.0.0.0"], {}),
        (["--host", "myhost.example"], {}),
        (["--host", "0.0.0.0"], {cli_app.PASSWORD_ENV: "short"}),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "dpcore", "app", "--port", str(port), *extra_args],
            cwd=ROOT,
            env=_env(tmp_path, **env_extra),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2, (extra_args, out.stdout, out.stderr)
        assert "password" in out.stderr and "Traceback" not in out.stderr
        assert not _listening(port)
    assert cli_app.PASSWORD_ENV in out.stderr or "characters" in out.stderr


# ------------------------------------------------------------------ real servers
def test_run_sh_serves_on_this_machine_only_and_asks_no_password(tmp_path):
    port = _free_port()
    with _server(["bash", str(ROOT / "run.sh"), "--server.port", str(port)], _env(tmp_path), port):
        assert _listening(port) == ["127.0.0.1"]
        ip = _network_ip()
        if ip is not None:  # the network side cannot even connect
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((ip, port), timeout=5).close()
        shown = _run_script("127.0.0.1", port)
        _assert_page_rendered(shown)
        assert not any("Shared on the network" in t for _, t in shown)


def test_shared_server_asks_the_network_side_for_the_password(tmp_path):
    ip = _network_ip()
    if ip is None:
        pytest.skip("this machine has no non-loopback address to test from")
    port = _free_port()
    env = _env(tmp_path, **{cli_app.PASSWORD_ENV: PASSWORD})
    argv = [sys.executable, "-m", "dpcore", "app", "--host", "0.0.0.0", "--port", str(port)]
    with _server(argv, env, port):
        base = f"http://{ip}:{port}"
        # no password: a browser gets the page saying the app is shared and asking for it; anything else 401
        status, _, body = _http(base + "/", headers={"Accept": "text/html"})
        assert status == 401 and "shared" in body and 'type="password"' in body
        status, headers, _ = _http(base + "/_stcore/health")
        assert status == 401 and "basic" in headers.get("www-authenticate", headers.get("WWW-Authenticate", "")).lower()
        assert " 403 " in _ws_handshake(ip, port)
        # the route that streams released files sits behind the same check (a link alone is not a login)
        status, _, _ = _http(base + "/_dpcore/files/some-run/synthetic.csv?t=" + "0" * 64)
        assert status == 401
        # a wrong password is refused, the right one sets the session cookie and goes back where the user was
        status, _, body = _http(base + serve.LOGIN_PATH, data=b"password=guess1234&next=/learn")
        assert status == 401 and "not right" in body
        form = urllib.parse.urlencode({"password": PASSWORD, "next": "/learn"}).encode()
        status, headers, _ = _http(base + serve.LOGIN_PATH, data=form)
        headers = {k.lower(): v for k, v in headers.items()}
        assert status == 303 and headers["location"] == "/learn"
        cookie = headers["set-cookie"].split(";")[0]
        attributes = {a.strip() for a in headers["set-cookie"].split(";")[1:]}
        assert cookie.startswith(serve.COOKIE + "=") and {"HttpOnly", "SameSite=Strict"} <= attributes
        assert "Secure" not in attributes  # plain http: a Secure cookie would never be sent back
        # every login gets its own session: a second one is another cookie, and both let their browser in
        other = {k.lower(): v for k, v in _http(base + serve.LOGIN_PATH, data=form)[1].items()}["set-cookie"]
        assert other.split(";")[0] != cookie
        assert _http(base + "/_stcore/health", headers={"Cookie": other.split(";")[0]})[0] == 200
        # with it: the app, its WebSocket, and a script run that says the app is shared
        status, _, body = _http(base + "/", headers={"Cookie": cookie})
        assert status == 200 and "<html" in body.lower()
        status, _, body = _http(
            base + "/_stcore/health",
            headers={"Authorization": "Basic " + base64.b64encode(b"x:" + PASSWORD.encode()).decode()},
        )
        assert (status, body.strip()) == (200, "ok")
        status, _, body = _http(
            base + "/_dpcore/files/some-run/synthetic.csv?t=" + "0" * 64, headers={"Cookie": cookie}
        )
        assert status == 403 and "not valid" in body  # past the login, the file route still wants its token
        assert " 101 " in _ws_handshake(ip, port, cookie)
        shown = _run_script(ip, port, cookie)
        _assert_page_rendered(shown)
        assert any("Shared on the network" in t for _, t in shown)
        # a forged cookie is not a login
        assert " 403 " in _ws_handshake(ip, port, f"{serve.COOKIE}=" + "0" * 64)
        # guessing over HTTP Basic is slowed, then refused unchecked (from another address: this one's logins and
        # sessions are untouched); the defaults let a few through, each answered after the pause
        guesses, t0 = [], time.monotonic()
        for i in range(serve.Backoff().free + 2):
            auth = "Basic " + base64.b64encode(f"x:guess{i:04d}".encode()).decode()
            guesses.append(_http(f"http://127.0.0.1:{port}/_stcore/health", headers={"Authorization": auth}))
        elapsed = time.monotonic() - t0
        statuses = [g[0] for g in guesses]
        checked = statuses.count(401)
        assert statuses == [401] * checked + [429] * (len(statuses) - checked) and 0 < checked < len(statuses)
        assert elapsed >= checked * serve.Backoff().pause * 0.9
        assert int({k.lower(): v for k, v in guesses[-1][1].items()}["retry-after"]) >= 1
        right = "Basic " + base64.b64encode(b"x:" + PASSWORD.encode()).decode()
        assert _http(f"http://127.0.0.1:{port}/_stcore/health", headers={"Authorization": right})[0] == 429
        assert _http(base + "/_stcore/health", headers={"Authorization": right})[0] == 200
        assert _http(base + "/_stcore/health", headers={"Cookie": cookie})[0] == 200


def test_streamlit_started_on_the_network_without_dpcore_refuses_to_open(tmp_path):
    ip = _network_ip()
    if ip is None:
        pytest.skip("this machine has no non-loopback address to test from")
    port = _free_port()
    argv = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.address",
        "0.0.0.0",
        "--server.port",
        str(port),
    ]
    with _server(argv, _env(tmp_path), port):
        shown = _run_script(ip, port)
        assert any(k == "alert" and "will not open" in t for k, t in shown), shown
        assert ("heading", "1 · Data") not in shown


def test_dpcore_app_runs_from_the_wheel_layout(tmp_path):
    """pyproject's force-include puts app.py, pages/, ui/ and .streamlit/ under dpcore/_app/ in the wheel; the
    installed copy must find them there (and never import a top-level `ui` from elsewhere)."""
    site = tmp_path / "site"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "dpcore", site / "dpcore", ignore=ignore)
    app_dir = site / "dpcore" / "_app"
    app_dir.mkdir()
    shutil.copy(ROOT / "app.py", app_dir / "app.py")
    shutil.copytree(ROOT / "pages", app_dir / "pages", ignore=ignore)
    shutil.copytree(ROOT / "ui", app_dir / "ui", ignore=ignore)
    (app_dir / ".streamlit").mkdir()
    shutil.copy(ROOT / ".streamlit" / "config.toml", app_dir / ".streamlit" / "config.toml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _env(tmp_path)
    env["PYTHONPATH"] = str(site)
    out = subprocess.run(
        [sys.executable, "-m", "dpcore", "app", "--dry-run"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert str(app_dir / "app.py") in out.stdout and "this machine only" in out.stdout
    port = _free_port()
    with _server([sys.executable, "-m", "dpcore", "app", "--port", str(port)], env, port, cwd=elsewhere):
        assert _listening(port) == ["127.0.0.1"]
        _assert_page_rendered(_run_script("127.0.0.1", port))
