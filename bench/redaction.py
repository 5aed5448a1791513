#!/usr/bin/env python3
"""Our redaction rules against Yelp's detect-secrets, on the secret corpus.

    python bench/redaction.py            # needs: pip install detect-secrets==1.5.0

Three maskers run over ``tests/secret_corpus.py`` (formats people paste into sessions,
and benign lines that must stay verbatim):

- ``ours``: :func:`bli_memory.core.memory.redaction.redact`;
- ``detect-secrets``: its 27 default plugins (keyword, base64/hex high entropy, vendor
  formats), scanned the way ``detect-secrets scan`` scans a file (line by line, with
  its default filters), each reported value replaced by a placeholder;
- ``ours + detect-secrets``: ours, then detect-secrets on our output (the layering
  the evaluation asks about: what would it add under our rules?).

For each it counts formats caught (the secret is gone from the output), benign lines
altered, and the cost: milliseconds per 12 KB exchange (the stop hook's bound) in one
warm process, and the import time a fresh hook process pays. Writes
bench/results/redaction.json and prints a Markdown table for docs/redaction.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:0] = [str(REPO_ROOT)]

from bli_memory.core.memory.redaction import redact  # noqa: E402
from tests.secret_corpus import BENIGN, SECRETS  # noqa: E402

RESULTS = BENCH_DIR / "results" / "redaction.json"
EXCHANGE_BYTES = 12 * 1024
REPEATS = 30


def ds_mask(text: str) -> str:
    """Replace every value detect-secrets reports in ``text`` with a placeholder."""
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    lines = text.split("\n")
    with default_settings():
        found = list(_process_line_based_plugins(list(enumerate(lines, start=1)), filename="exchange.txt"))
    out = list(lines)
    for secret in found:
        value = secret.secret_value or ""
        if value and secret.line_number:
            out[secret.line_number - 1] = out[secret.line_number - 1].replace(value, "[REDACTED:ds]")
    return "\n".join(out)


def held_out() -> list[tuple[str, str, str]]:
    """Formats from detect-secrets' own plugin list, written after our rules were.

    Its home ground: a fair check of what it would add under our rules.
    """
    from tests.secret_corpus import ALNUM, BASE64, HEX, URLSAFE, chars

    # (format, text before the secret, the secret, text after it)
    cases = [
        ("artifactory api key", "ARTIFACTORY_API_KEY=", "AKCp" + chars(69, ALNUM, start=101), ""),
        ("artifactory in prose", "the artifactory key is ", "AKCp" + chars(69, ALNUM, start=102), ""),
        ("ibm cloud iam", "ibm_cloud_iam_key: ", chars(44, URLSAFE, start=103), ""),
        ("ibm cos hmac", "secret_access_key = ", chars(48, HEX, start=104), ""),
        ("softlayer", "softlayer_api_key = ", chars(64, HEX, start=105), ""),
        ("cloudant", "https://acct:", chars(64, HEX, start=106), "@acct.cloudant.com"),
        ("square oauth secret", "", "sq0csp-" + chars(43, URLSAFE, start=107), ""),
        ("azure storage", "AccountKey=", chars(86, BASE64, start=108) + "==", ""),
        ("basic auth url", "https://user:", chars(12, ALNUM, start=109), "@example.com"),
        ("openai with marker", "",
         "sk-proj-" + chars(40, URLSAFE, start=110) + "T3BlbkFJ" + chars(40, URLSAFE, start=111), ""),
    ]
    return [(fmt, before + secret + after, secret) for fmt, before, secret, after in cases]


MASKERS = {
    "ours": lambda text: redact(text).text,
    "detect-secrets": ds_mask,
    "ours + detect-secrets": lambda text: ds_mask(redact(text).text),
}


def exchange() -> str:
    """A 12 KB exchange: benign lines and prose with a secret line every few lines."""
    lines: list[str] = []
    i = 0
    while sum(len(x) + 1 for x in lines) < EXCHANGE_BYTES:
        lines.append(BENIGN[i % len(BENIGN)])
        if i % 4 == 0:
            lines.append(SECRETS[(i // 4) % len(SECRETS)][1])
        i += 1
    return "\n".join(lines)[:EXCHANGE_BYTES]


def import_ms(module: str) -> float:
    """Median wall time of a fresh interpreter importing ``module``, minus a bare start."""
    def run(code: str) -> float:
        times = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)
            times.append(time.perf_counter() - t)
        return sorted(times)[2] * 1000

    return run(f"import {module}") - run("pass")


def main() -> None:
    rows = []
    text = exchange()
    for name, mask in MASKERS.items():
        missed = [fmt for fmt, line, secret in SECRETS if secret in mask(line)]
        altered = [line for line in BENIGN if mask(line) != line]
        mask(text)
        started = time.perf_counter()
        for _ in range(REPEATS):
            mask(text)
        per_exchange = (time.perf_counter() - started) / REPEATS * 1000
        held = held_out()
        held_missed = [fmt for fmt, line, secret in held if secret in mask(line)]
        rows.append({"masker": name, "held_out": len(held), "held_out_caught": len(held) - len(held_missed),
                     "held_out_missed": held_missed,
                     "formats": len(SECRETS), "caught": len(SECRETS) - len(missed),
                     "missed": missed, "benign": len(BENIGN), "altered": len(altered),
                     "altered_lines": altered, "ms_per_exchange": round(per_exchange, 2)})
    imports = {"ours": round(import_ms("bli_memory.core.memory.redaction"), 1),
               "detect-secrets": round(import_ms("detect_secrets.core.scan"), 1)}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"rows": rows, "import_ms": imports}, indent=2) + "\n")

    print("| masker | corpus formats caught | detect-secrets' formats caught | benign lines altered "
          "| ms per 12 KB exchange |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['masker']} | {r['caught']} / {r['formats']} | {r['held_out_caught']} / {r['held_out']} "
              f"| {r['altered']} / {r['benign']} | {r['ms_per_exchange']} |")
    print(f"\nimport in a fresh process: ours {imports['ours']} ms, "
          f"detect-secrets {imports['detect-secrets']} ms")
    for r in rows:
        if r["missed"] or r["held_out_missed"]:
            print(f"\n{r['masker']} missed: {', '.join(r['missed'] + r['held_out_missed'])}")
        if r["altered_lines"]:
            print(f"{r['masker']} altered: " + " | ".join(x[:60] for x in r["altered_lines"]))


if __name__ == "__main__":
    main()
