"""Server memory while a released file downloads through the app's streaming route.

    python scripts/bench_download.py WORKSPACE

Starts `dpcore app` on WORKSPACE (its newest run must have a synthetic CSV), reads the "Synthetic data (CSV)"
link off the Results page in Chromium, downloads it, and prints one JSON line: bytes, seconds, and the server's
VmRSS before, at its peak (sampled every 20 ms) and after.  Results in docs/benchmarks.md.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from playwright import sync_api

ROOT = str(Path(__file__).resolve().parent.parent)
WORKSPACE = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
env = dict(os.environ, DPCORE_WORKSPACE=WORKSPACE, PYTHONPATH=ROOT)
proc = subprocess.Popen(
    [sys.executable, "-m", "dpcore", "app", "--port", str(port)],
    cwd=ROOT,
    env=env,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
url = f"http://127.0.0.1:{port}"
for _ in range(600):
    try:
        if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
            break
    except OSError:
        time.sleep(0.1)


def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024


peak = {"v": 0.0}
stop = threading.Event()


def sample():
    while not stop.is_set():
        peak["v"] = max(peak["v"], rss(proc.pid))
        time.sleep(0.02)


with sync_api.sync_playwright() as p:
    b = p.chromium.launch(
        executable_path="/usr/bin/chromium",
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
        ],
    )
    page = b.new_page()
    page.set_default_timeout(120_000)
    t0 = time.monotonic()
    page.goto(url + "/results")
    link = page.get_by_role("link", name="Synthetic data (CSV)")
    link.wait_for()
    t_page = time.monotonic() - t0
    href = link.get_attribute("href")
    b.close()
before = rss(proc.pid)
th = threading.Thread(target=sample)
th.start()
t0 = time.monotonic()
n = 0
with urllib.request.urlopen(url + href, timeout=600) as r:
    while chunk := r.read(1 << 20):
        n += len(chunk)
secs = time.monotonic() - t0
stop.set()
th.join()
after = rss(proc.pid)
proc.terminate()
proc.wait(10)
print(
    json.dumps(
        {
            "bytes": n,
            "results_page_s": round(t_page, 2),
            "download_s": round(secs, 2),
            "rss_before_mib": round(before),
            "rss_peak_mib": round(peak["v"]),
            "rss_after_mib": round(after),
        }
    )
)
