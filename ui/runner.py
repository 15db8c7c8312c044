"""LEGACY (the teaching page only, until it moves onto :mod:`ui.jobs`): runs held by one browser session.

New code uses :mod:`ui.jobs`, where runs belong to the server process and live in the workspace.

Runs off the script thread: progress, cancel, and collecting finished runs.

A :class:`RunJob` runs :func:`dpcore.release.run_release` in a daemon thread.  The
thread never calls Streamlit: it writes progress into the job (a plain object) and
the page polls it from an ``st.fragment(run_every=...)``, so the page stays live.
Cancel sets an event that the mechanism checks between oracle calls; the progress
callback checks it too, so even a mechanism that reports progress but rarely checks
stops at its next report.  A failed or cancelled run yields no Release, hence no
release card and no ledger entry (the ledger is written by ``run_release`` only
after the mechanism returned).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import streamlit as st

from dpcore.errors import Cancelled, DPCoreError
from dpcore.executors import executor_from_spec
from dpcore.mechanisms import registry
from dpcore.release import Release, run_release

from . import state
from .text import md_escape

log = logging.getLogger("dpcore.app")


class RunJob:
    """One run in a background thread, observed by the page."""

    def __init__(self, label: str, kind: str, spec: dict, dataset=None) -> None:
        self.label = label
        self.dataset = dataset  # kept for the internal yardstick on the Results page
        self.kind = kind  # "release" | "teaching"
        self.spec = spec  # public description of what was asked (mechanism, ε, δ, params)
        self.cancel_event = threading.Event()
        self._lock = threading.Lock()
        self.t = 0
        self.T = 0
        self.message = "starting"
        self.info: dict = {}
        self.started = time.monotonic()
        self.finished: float | None = None
        self.release: Release | None = None
        self.internal = None  # the InternalEvaluation (private: this session only)
        self.error: str | None = None
        self.cancelled = False
        self.done = False
        self.collected = False
        self.record = None  # the RunRecord once collected
        self.thread: threading.Thread | None = None

    # called from the run thread
    def progress(self, t: int, T: int, message: str, info: dict) -> None:
        with self._lock:
            self.t, self.T, self.message, self.info = int(t), int(T), str(message), dict(info or {})
        if self.cancel_event.is_set():
            raise Cancelled("The run was cancelled; nothing was released.")

    # called from the script thread
    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def elapsed(self) -> float:
        end = self.finished if self.finished is not None else time.monotonic()
        return end - self.started

    def snapshot(self) -> dict:
        with self._lock:
            return {
                "t": self.t,
                "T": self.T,
                "message": self.message,
                "info": dict(self.info),
                "elapsed": self.elapsed,
                "cancelling": self.cancel_event.is_set(),
            }


@dataclass
class RunRecord:
    """A finished release kept for the Results and Compare pages (this session only)."""

    id: int
    label: str
    kind: str
    release: Release
    dataset_name: str
    spec: dict
    dataset: object = None  # the private Dataset the run used (this session only)
    internal: object = None  # its InternalEvaluation (private: this session only)
    created: float = field(default_factory=time.time)
    yardstick: dict | None = None  # the internal direct-Gaussian what-if, computed on demand
    downloads: dict = field(default_factory=dict)  # encoded download files, built once

    @property
    def title(self) -> str:
        return f"#{self.id} {self.label}"


PLANNED_CALL_KEYS = ("oracle_calls", "oracle_calls_estimate", "oracle_calls_at_most")


def start_release_job(
    *,
    label: str,
    kind: str,
    dataset,
    workload,
    mechanism: str,
    epsilon: float,
    delta: float | None,
    params: dict,
    seed: int | None,
    time_limit: float | None,
    executor_spec: str,
    ledger,
    plan: dict | None = None,
    class_width: int | None = None,
) -> RunJob:
    planned = next((plan[k] for k in PLANNED_CALL_KEYS if isinstance((plan or {}).get(k), (int, float))), None)
    spec = {
        "mechanism": mechanism,
        "epsilon": epsilon,
        "delta": delta,
        "params": dict(params),
        "seed_fixed": seed is not None,
        "executor": executor_spec,
        "time_limit": time_limit,
        "planned_oracle_calls": planned,
    }
    job = RunJob(label, kind, spec, dataset)
    oracle_options = {"time_limit": float(time_limit)} if time_limit else {}

    def target() -> None:
        executor = None
        try:
            if registry.get(mechanism).uses_oracle:
                executor = executor_from_spec(executor_spec)
            job.release, job.internal = run_release(
                dataset,
                workload,
                mechanism,
                epsilon,
                delta,
                params,
                seed=seed,
                progress=job.progress,
                cancel=job.cancel_event,
                oracle_options=oracle_options,
                executor=executor,
                ledger=ledger,
                class_width=class_width,
            )
        except Cancelled:
            job.cancelled = True
        except DPCoreError as exc:
            job.error = str(exc)
        except MemoryError:
            job.error = (
                "The run ran out of memory and stopped; nothing was released. Choose fewer marginals or a smaller k."
            )
        except Exception as exc:  # never let a traceback reach the page; keep it in the server log
            log.exception("run %s failed", label)
            first = (str(exc).splitlines() or [""])[0][:200]
            job.error = (
                f"The run failed unexpectedly ({type(exc).__name__}: {first}); nothing was released. "
                "Try other parameters; the server log has the details."
            )
        finally:
            if executor is not None:
                try:
                    executor.close()
                except Exception:  # closing a broken pool must not hide the run's outcome
                    log.exception("closing the executor failed")
            job.finished = time.monotonic()
            job.done = True

    job.thread = threading.Thread(target=target, name=f"dpcore-run-{label}", daemon=True)
    job.thread.start()
    return job


def collect_finished() -> None:
    """Move finished releases into this session's run list (script thread only)."""
    for key in (state.TEACH_JOB,):
        job = st.session_state.get(key)
        if job is None or not job.done or job.collected:
            continue
        job.collected = True
        if job.release is not None:
            rel = job.release
            names = st.session_state.get(state.DATASET_NAMES, {})
            # Numbered per session: a counter shared by sessions would reveal others' activity.
            record = RunRecord(
                len(state.runs()) + 1,
                job.label,
                job.kind,
                rel,
                names.get(rel.dataset_id, rel.dataset_name),
                job.spec,
                job.dataset,
                internal=job.internal,
            )
            state.runs().append(record)
            job.record = record


def running(key: str) -> RunJob | None:
    job = st.session_state.get(key)
    return job if job is not None and not job.done else None


def find_run(run_id: int) -> RunRecord | None:
    for r in state.runs():
        if r.id == run_id:
            return r
    return None


def progress_panel(key: str, poll_seconds: float = 0.5) -> None:
    """Live progress of the job under ``key`` with a Cancel button; reruns the app when it ends."""
    job = running(key)
    if job is None:
        return

    @st.fragment(run_every=poll_seconds)
    def live() -> None:
        if job.done:
            st.rerun()  # the whole app: collect the run, update the sidebar ledger
        snap = job.snapshot()
        frac = min(1.0, snap["t"] / snap["T"]) if snap["T"] else 0.0
        st.progress(frac, text=f"Round {snap['t']} of {snap['T'] or '?'} — {md_escape(snap['message'], 100)}")
        cols = st.columns(3)
        cols[0].metric("Elapsed", f"{snap['elapsed']:.1f} s", help="Wall-clock time since the run started.")
        calls = snap["info"].get("oracle_calls")
        planned = job.spec.get("planned_oracle_calls")
        if calls is not None:
            shown = f"{int(calls):,}"
        elif planned and snap["T"]:
            shown = f"≈ {int(planned * min(snap['t'], snap['T']) / snap['T']):,}"  # the plan's calls per round × t
        else:
            shown = "—"
        cols[1].metric(
            "Oracle calls",
            shown,
            None if not planned else f"of {int(planned):,} planned",
            delta_color="off",
            delta_arrow="off",
            help="SCIP solves so far: as reported by the mechanism, or (≈) the plan's calls per round "
            "times the rounds done.",
        )
        cols[2].metric("Round", f"{snap['t']} / {snap['T'] or '?'}", help="Rounds done of the planned total T.")
        extra = {k: v for k, v in snap["info"].items() if k != "oracle_calls" and isinstance(v, (int, float, str))}
        if extra:
            st.caption(" · ".join(f"{md_escape(k, 40)}: {md_escape(_short(v), 40)}" for k, v in extra.items()))
        if snap["cancelling"]:
            st.info("Cancelling… the run stops at its next check (between oracle calls).")
        else:
            st.button(
                "Cancel run",
                key=f"cancel:{key}",
                on_click=job.cancel,
                icon=":material/stop:",
                help="Stop the run; nothing is released and no privacy budget is charged.",
            )

    live()


def _short(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def outcome(key: str) -> None:
    """The result message of the last finished job under ``key``."""
    job = st.session_state.get(key)
    if job is None or not job.done:
        return
    if job.cancelled:
        st.info(f"The run was cancelled after {job.elapsed:.1f} s: nothing was released and no budget was charged.")
    elif job.error:
        st.error(job.error)
    elif job.record is not None:
        st.success(f"Run {job.record.id} finished in {job.elapsed:.1f} s.")
