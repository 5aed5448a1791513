"""Values judged with the key they are stored under: a memory's metadata.

``{"password": "hunter2"}`` says what ``password=hunter2`` says, so a key that names a
secret makes its value one, whatever the value looks like. One rule for every key:

- A key names a secret when the assignment rules mask ``key=<value>``
  (:mod:`~bli_memory.core.memory.redaction.named`: ``password``, ``DB_PASSWORD``,
  ``api_key``, ``token``, ``secret``, ``pwd``, ``PGPASS``, ...; not ``token_ttl`` or
  ``max_tokens``), or when its last word is ``pin``, ``passcode``, ``cvv`` or ``cvc``
  (``{"pin": 4242}``, ``card_pin``; not ``version_pin``), the secrets that are short numbers and so are
  never masked in text; or when it is an HTTP header that carries a credential whole:
  ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie``.
- Under such a key every value is masked: a string of any length (``"x"`` as much as
  ``"abc"``), a number, and a list or object, which is replaced whole. Kept are only
  what holds no secret: null, a boolean (it says whether there is one), the empty
  string, a reference to a secret kept elsewhere (``$VAR``, ``${VAR}``, ``%VAR%``,
  ``{{ template }}``, ``<your-key>``) or an already masked value (``***``, ``sk-...``,
  a placeholder), and a path that the assignment rules keep (``{"pwd": "/srv/app"}``,
  the shell's working directory, as ``PWD=/srv/app`` is kept), and under a key ending in
  ``pin`` a string that is not digits, since a pin is also a pinned version or branch
  (``{"pin": "numpy==1.26"}``, ``{"pin": "main"}``).
"""

from __future__ import annotations

import re
from typing import Any

from bli_memory.core.memory.redaction.benign import _is_reference

__all__ = ["masked_under_key", "names_a_secret"]

#: The placeholder of a value masked because of its key.
_PLACEHOLDER = "[REDACTED:metadata_secret]"
# A value that no secret name's rule would keep: letters, digits and a symbol.
_PROBE = "Qz8#kV2wXp"
# Not a pin of a version, a package or a commit (version_pin, dependency_pin).
_PINNED_THING = "".join(rf"(?<!(?i:{word})[_.\s-])(?<!(?i:{word}))"
                        for word in ("version", "dependency", "package", "commit", "branch", "image"))
_SHORT_SECRET_KEY = re.compile(
    rf"(?:^|[_.\s-]|(?<=[a-z])(?=[A-Z]))(?:{_PINNED_THING}(?i:pin)|(?i:passcode|cvv|cvc))$")
# HTTP headers that carry a credential whole (RFC 9110 11.6.2 and 11.7.2, RFC 6265):
# {"headers": {"Authorization": "Basic ..."}}, {"Cookie": "session=..."}.
_CREDENTIAL_HEADER = re.compile(r"(?i:(?:proxy[-_]?)?authorization|(?:set[-_]?)?cookies?)")
_PATH = re.compile(r"[/~.]|[A-Za-z]:[\\/]|\\\\")
# A pin is also a pinned version or branch ({"pin": "numpy==1.26"}, {"pin": "main"}): under
# a key ending in pin, a string is a secret only when it is digits, as a PIN is.
_PIN_KEY = re.compile(r"(?:^|[_.\s-]|(?<=[a-z])(?=[A-Z]))(?i:pin)$")
_PIN_DIGITS = re.compile(r"[0-9][0-9 -]*")


def names_a_secret(key: str) -> bool:
    """Whether a metadata key says its value is a secret (see the module docstring).

    Args:
        key: A metadata key, e.g. ``"password"``, ``"card_pin"``, ``"token_ttl"``.

    Returns:
        True for ``password``, ``DB_PASSWORD``, ``api_key``, ``token``, ``secret``,
        ``pwd``, ``pin``, ``Authorization``, ``Cookie``; False for ``token_ttl``, ``max_tokens``, ``owner``.
    """
    from bli_memory.core.memory.redaction import redact

    if _SHORT_SECRET_KEY.search(key) or _CREDENTIAL_HEADER.fullmatch(key):
        return True
    out = redact(f"{key}={_PROBE}").text
    return out.startswith(f"{key}=[REDACTED:") and out.endswith("]") and _PROBE not in out


def masked_under_key(key: str, value: Any) -> tuple[Any, int]:
    """``value`` as it may be stored under ``key``, and how many secrets were masked (0 or 1).

    Only the key's judgement is applied here; a string value is also redacted on its own
    by the caller (:func:`bli_memory.core.memory.stored_secrets.masked_metadata`).

    Args:
        key: The metadata key the value sits under.
        value: Any JSON value.

    Returns:
        ``(value, 0)`` when the key names no secret or the value holds none (null, a
        boolean, ``""``, a reference, a masked value, a path the rules keep, a string
        under a ``pin`` key that is not digits: a pinned version or branch);
        ``(masked, 1)`` otherwise, where ``masked`` is the string with the secret replaced
        (``password=hunter2`` gives ``[REDACTED:env_secret]``) or, for any other value,
        ``"[REDACTED:metadata_secret]"``.
    """
    from bli_memory.core.memory.redaction import redact

    if value is None or isinstance(value, bool) or value == "" or not names_a_secret(key):
        return value, 0
    if isinstance(value, str):
        if _is_reference(value):
            return value, 0
        if _PIN_KEY.search(key) and not _PIN_DIGITS.fullmatch(value.strip()):
            return value, 0
        pair = redact(f"{key}={value}")
        head = f"{key}="
        if pair.masked and pair.text.startswith(head):
            return pair.text[len(head):], 1
        if _PATH.match(value.lstrip("\"'")):
            return value, 0
    return _PLACEHOLDER, 1
