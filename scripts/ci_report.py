#!/usr/bin/env python3
"""Print the end of a CI log: what failed, with its first lines, and the slowest tests.

Usage::

    python3 scripts/ci_report.py RUN_DIR [--rc N] [--seconds S] [--sha SHA]

``RUN_DIR`` holds one JUnit XML file per test session (``full.xml``, ``fast-3.11.xml``,
...; ``noxfile.py`` writes them when ``BLI_CI_REPORT_DIR`` is set). The report gives the
counts per session, the :data:`SLOWEST` slowest tests over all sessions, then every failed
or erroring test with the first :data:`FIRST_LINES` lines of its failure (last, so they
are what the end of the log shows), then one closing line
``ci: N passed, N failed, N skipped`` (``N failed`` counts errors too). It also writes
``RUN_DIR/summary.json``: ``{"sha", "rc", "failed": [session::test id, ...], "seconds",
"passed", "skipped"}``.

Standard library only: it runs with the system's ``python3`` even when the project's
environment could not be built. Exit status is always 0; the run's own status is ``--rc``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

__all__: list[str] = []

FIRST_LINES = 12
"""Lines of each failure shown (the assertion and its nearest context)."""
SLOWEST = 15
"""Slowest tests listed."""


@dataclass
class Case:
    """One test case of one session."""

    session: str
    test_id: str
    seconds: float
    status: str  # passed, failed, error, skipped
    text: str = ""


@dataclass
class Session:
    """One JUnit file's cases."""

    name: str
    cases: list[Case] = field(default_factory=list)


def _test_id(case: ET.Element) -> str:
    """pytest's node id from JUnit's ``classname`` (``tests.core.test_x[.TestClass]``)."""
    parts = case.get("classname", "").split(".")
    name = case.get("name", "")
    modules = [i for i, part in enumerate(parts) if part.startswith("test")]
    if not modules:
        return "::".join(filter(None, [".".join(parts), name]))
    cut = modules[-1] + 1  # the module; a class (TestX) and the name follow it
    return "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name])


def _seconds(value: str | None) -> float:
    """A JUnit ``time`` attribute as finite seconds (0.0 when missing or not a number)."""
    try:
        seconds = float(value or 0)
    except ValueError:
        return 0.0
    return seconds if math.isfinite(seconds) and seconds >= 0 else 0.0


def read_session(path: Path) -> Session:
    """The cases of one JUnit XML file (an unreadable file is one erroring case)."""
    session = Session(path.stem)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        session.cases.append(Case(session.name, "<junit report>", 0.0, "error", f"unreadable: {exc}"))
        return session
    by_id: dict[str, Case] = {}
    for case in root.iter("testcase"):
        status, text = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                status = {"failure": "failed"}.get(tag, tag)
                text = "\n".join(filter(None, [node.get("message", ""), node.text or ""]))
                break
        test_id = _test_id(case)
        seen = by_id.get(test_id)
        if seen is None:
            by_id[test_id] = Case(session.name, test_id, _seconds(case.get("time")), status, text)
            session.cases.append(by_id[test_id])
        elif status in ("failed", "error"):
            # pytest writes a second case for an error in teardown: one test, one entry.
            seen.text = "\n".join(filter(None, [seen.text, text]))
            if seen.status not in ("failed", "error"):
                seen.status = status
    return session


def _first_lines(text: str) -> list[str]:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    # The lines pytest marks with "E " are the failure itself: show them first.
    marked = [ln for ln in lines if ln.lstrip().startswith("E ")]
    chosen = (marked or lines)[:FIRST_LINES]
    return [ln[:300] for ln in chosen]


def _last_step(run_dir: Path) -> str:
    """The step ``.ci/run`` was in when it stopped (its ``step`` file), or ``""``."""
    try:
        return (run_dir / "step").read_text(errors="replace").strip()[:200]
    except OSError:
        return ""


def report(run_dir: Path, rc: int, seconds: float | None, sha: str | None) -> str:
    """The report's text; writes ``summary.json`` beside the JUnit files."""
    sessions = [read_session(p) for p in sorted(run_dir.glob("*.xml"))]
    cases = [c for s in sessions for c in s.cases]
    bad = [c for c in cases if c.status in ("failed", "error")]
    out = ["", "=" * 30 + " CI summary " + "=" * 30]
    if not sessions:
        out.append("no test session wrote a report (the run stopped before the tests)")
    for s in sessions:
        n = {k: sum(c.status == k for c in s.cases) for k in ("passed", "failed", "error", "skipped")}
        failed = n["failed"] + n["error"]
        out.append(f"{s.name}: {n['passed']} passed, {failed} failed, {n['skipped']} skipped")
    slow = sorted((c for c in cases if c.status != "skipped"), key=lambda c: -c.seconds)[:SLOWEST]
    if slow:
        out.append("")
        out.append(f"{len(slow)} slowest tests:")
        out.extend(f"  {c.seconds:7.1f} s  [{c.session}] {c.test_id}" for c in slow)
    if bad:
        out.append("")
        out.append(f"FAILED ({len(bad)}):")
        for c in bad:
            out.append(f"- [{c.session}] {c.test_id}")
            out.extend(f"    {ln}" for ln in _first_lines(c.text))
    passed = sum(c.status == "passed" for c in cases)
    skipped = sum(c.status == "skipped" for c in cases)
    failed_ids = [f"{c.session}::{c.test_id}" for c in bad]
    step = _last_step(run_dir)
    if rc != 0 and not bad:
        # No test failed, so a step did: name it, or the log's end would read "0 failed".
        failed_ids.append(f"step: {step or 'unknown'}")
        out.append("")
        out.append(f"FAILED: the step \"{step or 'unknown'}\" exited with status {rc}; "
                   "its output is just above this summary")
    summary = {"sha": sha, "rc": rc, "failed": failed_ids,
               "seconds": seconds, "passed": passed, "skipped": skipped}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    out.append("")
    out.append(f"exit status {rc}" + (f" after {seconds:.0f} s" if seconds is not None else ""))
    out.append(f"ci: {passed} passed, {len(bad)} failed, {skipped} skipped"
               + (f", stopped in step: {step}" if rc != 0 and not bad else ""))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--rc", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--sha", default=None)
    args = parser.parse_args(argv)
    try:
        print(report(args.run_dir, args.rc, args.seconds, args.sha))
    except Exception as exc:  # the report must never hide the run's own result
        print(f"ci report failed: {exc!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
