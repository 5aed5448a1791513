"""Vendor credential formats from a maintained rule set: the second pass of :func:`redact`.

Our own rules (the rest of this package) know the names, prose and layouts people put
secrets in, and the prefixes of about sixty providers. The hundreds of other vendor
formats (API keys, personal access tokens, DSNs with a key inside) change every month;
a maintained catalogue keeps up with them better than we can. This module runs
`kingfisher-secret-scanner <https://github.com/mongodb/kingfisher>`_ (Apache-2.0; its
rules are the betterleaks catalogue, MIT) over text our rules already redacted, and
masks each secret it finds as ``[REDACTED:<rule>]``, e.g. ``[REDACTED:github_pat]``.

Why this one, and what it costs, is measured in docs/redaction.md ("Vendor rules"):
exact spans of the secret itself, linear time in native code (about 0.03 CPU s/MB), and
no finding on the benign corpus. Only rules of ``high`` confidence run.

Loading the rules takes about 0.25 s from the compiled cache
(``$XDG_CACHE_HOME/bli-memory/secret-rules``, 0700) and a few seconds when the cache is
cold, so the rules load on first use, never at import: the prompt hook does not load
them; the daemon loads them once at start (:func:`warm`), and ``install`` fills the cache.
Text with no run of :data:`MIN_RUN` credential characters is not scanned at all: every
secret the rule set found in our corpora and 3 MB of mixed text is such a run.

Rules that find an identifier rather than a secret (a client id, an account host, a
project URL: :data:`_IDENTIFIER_KIND`) leave the text alone; the rule set reports them
only to pair them with their secret. A finding the scanner keeps hidden because it is a
pair's other half (a secret key found beside its id) is masked like any other.

When the package cannot be imported (a platform without its wheel), the second pass is
skipped and :func:`vendor_rules_status` says so (``cockpit doctor`` shows it): our
rules still run. A scan that fails is skipped the same way, so :func:`redact` still
never raises on a ``str``.
"""

from __future__ import annotations

import re
import threading
from typing import Any

__all__ = ["MIN_RUN", "VENDOR_PACKAGE", "mask_vendor_secrets", "scan_view", "vendor_rules_status", "warm"]

VENDOR_PACKAGE = "kingfisher-secret-scanner"
"""The distribution the vendor rules come from; its version is pinned in constraints.txt."""

MIN_RUN = 16
"""Shortest run of credential characters (letters, digits, ``_+/=-``) that is scanned.

The shortest secret the rule set found across our secret corpus, the evaluation's 151
vendor and long-tail lines and 3 MB of mixed text was 24 characters, and each held a run
of at least 16 (docs/redaction.md, "Vendor rules"). Prose without such a run skips the
scan and the rule load."""

_RUN = re.compile(rf"[A-Za-z0-9_+/=-]{{{MIN_RUN}}}")

# Rules that report an identifier, to pair it with its secret, not a secret: client and
# key ids, account hosts, instance and project URLs, public keys, names.
_IDENTIFIER_KIND = re.compile(
    r".*(?:_id|_domain|_host|_name|public_key|_service_account|jfrog_url|instance_url"
    r"|project_url|rest_url)"
)
_RULE_NUMBER = re.compile(r"\.\d+$")
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_-]*")
_TOKEN_HEAD = re.compile(r"[A-Za-z0-9_]*")  # matched on the reversed text before a token
_GLUED_REACH = 64
#: What :func:`scan_view` makes a space: a non-ASCII character, a mark that ends a token in
#: running text and that no vendor format holds, or a colon before a space or the end
#: (``curl -u <token>: ...``).
_PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_.-]*\]")
_NOT_SCANNED = re.compile(r"[^\x00-\x7f]|[?!\]})>|*<\[({,;`\\]|:(?=\s|$)")

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _scanner() -> Any | None:
    """The scanner over the ``high`` confidence rules, built once per process; None when
    the package is missing or its rules cannot load."""
    with _lock:
        if "scanner" not in _state:
            _state["scanner"] = _build()
        return _state["scanner"]


def _build() -> Any | None:
    try:
        from kingfisher_sdk import Rules, Scanner
    except ImportError as exc:
        _state["error"] = f"{VENDOR_PACKAGE} is not installed ({exc})"
        return None
    cache = _cache_dir()
    try:
        rules = Rules(confidence="high", cache_dir=cache) if cache else Rules(confidence="high", cache=False)
        return Scanner(rules, base64=False)
    except Exception as exc:  # noqa: BLE001 - a broken install must not break redaction
        _state["error"] = f"{VENDOR_PACKAGE} could not load its rules ({type(exc).__name__}: {exc})"
        return None


def _cache_dir() -> str | None:
    """The private folder of the compiled rules, or None when it cannot be made."""
    from bli_memory.core.paths import cache_dir
    from bli_memory.core.private_files import make_own_private_dir

    folder = cache_dir() / "secret-rules"
    try:
        make_own_private_dir(folder.parent)
        make_own_private_dir(folder)
    except OSError:
        return None
    return str(folder)


def warm() -> bool:
    """Load the rules now (the daemon at start, ``install`` once), so no later call waits.

    Returns:
        True when the vendor rules are ready, False when they are unavailable.
    """
    return _scanner() is not None


def vendor_rules_status() -> dict[str, str | bool]:
    """What ``cockpit doctor`` shows: ``{"package", "version", "ready"[, "error"]}``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(VENDOR_PACKAGE)
    except PackageNotFoundError:
        found = "missing"
    ready = warm()
    status: dict[str, str | bool] = {"package": VENDOR_PACKAGE, "version": found, "ready": ready}
    if not ready:
        status["error"] = str(_state.get("error", "unavailable"))
    return status


def scan_view(text: str) -> str:
    """``text`` as the rule set reads it: each character that is not ASCII, each closing
    or sentence punctuation mark (:data:`_NOT_SCANNED`), and each character of one of our
    ``[REDACTED:...]`` placeholders (which a rule read as ``user:password``) becomes one space.

    The rules end a token at a space, a quote or a line end; a token followed by ``?``,
    ``]``, ``</code>`` or a CJK full stop was not found at all. The view has one ASCII
    character per character of ``text``, so the scanner's byte offsets are ``str``
    indices of ``text`` as they are.
    """
    blanked = _PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)  # ours are not secrets
    return _NOT_SCANNED.sub(" ", blanked)


def _spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of each vendor secret in ``text``, as ``str`` indices, sorted."""
    scanner = _scanner()
    if scanner is None:
        return []
    view = scan_view(text).encode("ascii", "replace")
    try:
        findings = scanner.scan(view)
    except Exception:  # noqa: BLE001 - our rules already ran; see the module docstring
        return []
    spans = []
    for finding in findings:
        kind = _RULE_NUMBER.sub("", finding.rule_id.split(".", 1)[-1]).replace("-", "_")
        if _IDENTIFIER_KIND.fullmatch(kind):
            continue
        start, end = finding.location["start_offset"], finding.location["end_offset"]
        if 0 <= start < end <= len(text):
            spans.append((start, end, kind))
    return sorted(spans)


def _whole_token(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to the rest of the token: right over letters, digits, ``_``
    and ``-`` (no tail of ``FLWSECK_TEST-<hex>`` survives a rule that matched its head),
    left over letters, digits and ``_`` only (a prefix glued to the token goes, a word
    before a hyphen, ``staging-env-``, stays), at most :data:`_GLUED_REACH` characters.
    Each side is one anchored match, so widening costs the token's length."""
    tail = _TOKEN_TAIL.match(text, end)
    glued = _TOKEN_HEAD.match(text[max(0, start - _GLUED_REACH):start][::-1])
    return start - (glued.end() if glued else 0), (tail.end() if tail else end)


def mask_vendor_secrets(text: str) -> tuple[str, int]:
    """Mask every vendor secret in ``text`` (already redacted by our rules).

    Returns:
        The text with each secret replaced by ``[REDACTED:<kind>]`` (``kind`` is the
        rule's name, e.g. ``github_pat``), and how many were masked. The whole token
        goes (:func:`_whole_token`). A finding that
        overlaps one already masked, or an earlier placeholder, is skipped, so running
        this again on its output finds nothing.
    """
    if not _RUN.search(text):
        return text, 0
    parts: list[str] = []
    last = masked = 0
    for start, end, kind in _spans(text):
        if start < last:  # inside the token already masked: no widening again (linear)
            continue
        start, end = _whole_token(text, start, end)
        if start < last or "[REDACTED:" in text[start:end]:
            continue
        parts += [text[last:start], f"[REDACTED:{kind}]"]
        last, masked = end, masked + 1
    if not masked:
        return text, 0
    parts.append(text[last:])
    return "".join(parts), masked
