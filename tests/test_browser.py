"""The app in a real browser: Debian Chromium driven by Playwright against a live server.

The server is started by the test on a free localhost port.  Screenshots and the
measured timings go to test-artifacts/ (not committed).  Timings are recorded, not
asserted (performance targets live in benchmarks): docs/bench-parts/app.md reports them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
XSS = "<img src=x onerror=alert(1)>"
TIMINGS: dict[str, float] = {}

if not Path(CHROMIUM).exists():
    pytest.skip(
        "Debian chromium is not installed (test.sh installs it: apt-get install chromium)", allow_module_level=True
    )
sync_api = pytest.importorskip("playwright.sync_api")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m streamlit run app.py`` in ``cwd`` on a free port, until closed."""

    def __init__(self, cwd: Path, log_name: str) -> None:
        port = free_port()
        ARTIFACTS.mkdir(exist_ok=True)
        self.log = open(ARTIFACTS / log_name, "w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=cwd,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                self.close()
                pytest.fail(f"streamlit exited with status {self.proc.returncode}; see test-artifacts/{log_name}")
            try:
                if urllib.request.urlopen(self.url + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.close()
                pytest.fail("the server did not answer its health check within 60 s")
            time.sleep(0.05)
        self.healthy = time.monotonic()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def server():
    srv = Server(ROOT, "server.log")
    try:
        yield srv.url, srv.healthy
    finally:
        srv.close()
        if TIMINGS:  # a partial run (-k) keeps the last full file unless it measured something
            ARTIFACTS.joinpath("browser_timings.json").write_text(json.dumps(TIMINGS, indent=2))


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.dialogs = dialogs
    yield pg
    context.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def go(page, link: str, title: str | None = None) -> float:
    """Switch page through the sidebar; seconds until the new page's title shows."""
    t0 = time.monotonic()
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=link).first.click()
    page.get_by_role("heading", name=title or link).first.wait_for()
    return time.monotonic() - t0


def set_number(page, label: str, value) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    wait_idle(page)


def wait_idle(page, timeout: float = 60) -> None:
    """Wait until Streamlit has finished the script run an action triggered: the "running"
    indicator must stay hidden across two checks, so a run that has not started yet when
    we first look (a loaded machine is slow to start one) is not mistaken for a finished one."""
    status = page.locator('[data-testid="stStatusWidget"]')
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 2:
        page.wait_for_timeout(400)
        if status.is_visible():
            quiet = 0
            status.wait_for(state="hidden", timeout=max(1.0, deadline - time.monotonic()) * 1000)
        else:
            quiet += 1


def pick(page, label: str, option_text: str) -> None:
    page.get_by_label(label, exact=True).click()  # open the selectbox
    page.get_by_role("option").filter(has_text=option_text).first.click()
    wait_idle(page)


def test_one_line_page_baseline(browser, tmp_path):
    """The yardstick for the first-page timing: a one-line Streamlit page, measured the same way."""
    (tmp_path / "app.py").write_text('import streamlit as st\nst.write("one line")\n')
    srv = Server(tmp_path, "baseline_server.log")
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(srv.url)
        page.get_by_text("one line").wait_for(timeout=60_000)
        TIMINGS["one_line_page_after_health_s"] = round(time.monotonic() - srv.healthy, 2)
        context.close()
    finally:
        srv.close()


def test_release_flow_in_a_real_browser(server, page):
    url, healthy = server
    page.goto(url)
    page.get_by_text("32,561").first.wait_for()  # the Rows (n) metric above the preview grid
    TIMINGS["first_page_rows_shown_after_health_s"] = round(time.monotonic() - healthy, 2)
    page.get_by_text("Possible records").wait_for()
    TIMINGS["first_page_after_health_s"] = round(time.monotonic() - healthy, 2)
    page.get_by_text("rows fit the schema").wait_for()
    TIMINGS["first_page_complete_after_health_s"] = round(time.monotonic() - healthy, 2)
    shot(page, "01_data")

    TIMINGS["switch_to_workload_s"] = round(go(page, "Workload", "2 · Workload"), 2)
    set_number(page, "m (number of marginals)", 4)
    page.get_by_text("Queries |Q|").wait_for()
    shot(page, "02_workload")

    TIMINGS["switch_to_release_s"] = round(go(page, "Release", "3 · Release"), 2)
    pick(page, "Mechanism", "FEM (Follow")
    set_number(page, "rounds", 8)
    set_number(page, "samples", 8)
    shot(page, "03_release")
    t0 = time.monotonic()
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("finished in").wait_for(timeout=60_000)
    TIMINGS["fem_run_8x8_4_marginals_s"] = round(time.monotonic() - t0, 2)
    assert page.get_by_text("nothing was released").count() == 0

    TIMINGS["switch_to_results_s"] = round(go(page, "Results", "4 · Results"), 2)
    page.get_by_text("Error of every query").wait_for()
    charts = page.locator('[data-testid="stVegaLiteChart"]')
    charts.first.wait_for()
    assert charts.count() >= 3  # histogram, per-marginal bars, real vs released (+ trace)
    shot(page, "04_results")
    with page.expect_download() as dl:
        page.get_by_role("button", name="Synthetic data (CSV)").click()
    rows = list(csv.reader(io.StringIO(Path(dl.value.path()).read_text())))
    with page.expect_download() as dl_card:
        page.get_by_role("button", name="Release card (JSON)").click()
    card = json.loads(Path(dl_card.value.path()).read_text())
    header = [a["name"] for a in card["data"]["schema"]]
    assert rows[0] == header and len(header) == 14
    assert len(rows) - 1 == card["output"]["rows"] == 8 * 8  # FEM releases T·s rows
    assert card["mechanism"]["name"] == "fem" and "seed" not in card["parameters"]

    TIMINGS["switch_to_compare_s"] = round(go(page, "Compare", "5 · Compare"), 2)
    TIMINGS["switch_back_to_data_s"] = round(go(page, "Data", "1 · Data"), 2)
    shot(page, "05_back_to_data")
    assert page.dialogs == []


def metric_values(page) -> list[str]:
    return page.get_by_test_id("stMetricValue").all_inner_texts()


def test_schema_editor_edits_apply_and_survive_page_switches(server, page):
    url, _ = server
    page.goto(url)
    page.get_by_text("rows fit the schema").wait_for()
    wait_idle(page)
    include_header = page.locator('[role="columnheader"]').filter(has_text="include")
    editor = page.get_by_test_id("stDataFrame").filter(has=include_header)
    editor.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    box = editor.bounding_box()
    row_height, header = 35, 35  # Streamlit's default grid geometry
    # Untick "include" of row 9 (sex, 2 values): 14 -> 13 attributes, domain size halves.
    page.mouse.click(box["x"] + 40, box["y"] + header + row_height * 9 + row_height / 2)
    wait_idle(page)
    page.get_by_test_id("stMetricValue").filter(has_text="3,943,141,171,200").wait_for()
    assert metric_values(page)[3:6] == ["13", "3,943,141,171,200", "156"]
    # Type a sixth value for race (row 8): the domain grows by 6/5 and race becomes declared by the user.
    page.mouse.dblclick(box["x"] + 600, box["y"] + header + row_height * 8 + row_height / 2)
    cell_editor = page.locator("textarea.gdg-input")  # the grid's overlay editor for a text cell
    cell_editor.wait_for()
    cell_editor.fill("White | Black | Other | Asian-Pac-Islander | Amer-Indian-Eskimo | Extra")
    cell_editor.press("Enter")
    wait_idle(page)
    page.get_by_test_id("stMetricValue").filter(has_text="4,731,769,405,440").wait_for()
    go(page, "Workload", "2 · Workload")
    go(page, "Data", "1 · Data")
    page.get_by_text("rows fit the schema").wait_for()
    wait_idle(page)
    assert metric_values(page)[3:6] == ["13", "4,731,769,405,440", "157"]
    shot(page, "06b_schema_edited")


def test_teaching_presets_in_a_real_browser(server, page):
    url, _ = server
    page.goto(url)
    page.get_by_text("Possible records").wait_for()
    go(page, "How it works")
    page.get_by_role("button", name="Run the demo").wait_for()
    wait_idle(page)
    titles = {
        "dualquery": "DualQuery (multiplicative weights over queries + SCIP best response)",
        "fem": "FEM (Follow-the-perturbed-leader + Exponential Mechanism)",
    }
    ran = 0
    for name, title in titles.items():
        choice = page.get_by_text(title, exact=True)
        if not choice.count():
            continue  # not registered
        choice.first.click()
        wait_idle(page)
        before = page.get_by_text("Demo run").count()
        t0 = time.monotonic()
        page.get_by_role("button", name="Run the demo").click()
        page.get_by_text(f"Run {ran + 1} finished in").wait_for(timeout=60_000)
        TIMINGS[f"teaching_preset_{name}_click_to_shown_s"] = round(time.monotonic() - t0, 2)
        page.get_by_text("The ε ledger of this run").wait_for()
        assert page.get_by_text("Demo run").count() >= before
        shot(page, f"06_teaching_{name}")
        ran += 1
    assert ran >= 1


def test_hostile_column_name_is_shown_as_text(server, page, tmp_path):
    url, _ = server
    page.goto(url)
    page.get_by_text("Possible records").wait_for()
    page.get_by_text("Upload a CSV or Parquet file").click()
    uploader = page.get_by_test_id("stFileUploader").filter(has_text="CSV (comma, semicolon")
    uploader.wait_for()
    upload = tmp_path / "hostile.csv"
    upload.write_text(f"{XSS},colour\n" + "".join(f"{'ab'[i % 2]},{'xyz'[i % 3]}\n" for i in range(60)))
    uploader.locator('input[type="file"]').set_input_files(str(upload))
    page.get_by_text("Using the uploaded file:").wait_for()
    page.get_by_text("rows fit the schema").wait_for()
    wait_idle(page)
    shot(page, "07_hostile_column")
    # The name reaches the page as text: the data grids (drawn on a canvas) mirror their
    # headers into an accessible table, where the name is the cell's text content ...
    header = page.locator('[role="columnheader"]').filter(has_text=XSS).first
    header.wait_for(state="attached")
    assert header.text_content() == XSS
    assert page.locator('[role="gridcell"]').filter(has_text=XSS).count() >= 1  # schema editor row
    # ... and never as an element.
    assert page.locator('img[src="x"]').count() == 0
    assert page.evaluate("() => document.querySelectorAll('img[onerror]').length") == 0
    # Marginal names built from it are plain text too (the hand-picking list).
    go(page, "Workload", "2 · Workload")
    page.get_by_text("pick by hand").click()
    wait_idle(page)
    page.get_by_label("2-way marginals", exact=True).click()
    option = page.get_by_role("option").filter(has_text=XSS).first
    option.wait_for()
    assert option.text_content() == f"{XSS} × colour"
    shot(page, "08_hostile_marginal_option")
    assert page.locator('img[src="x"]').count() == 0
    page.wait_for_timeout(500)
    assert page.dialogs == []
