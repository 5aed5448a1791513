"""Secrets hidden from the rules by odd characters (issue 30, a break-it pass).

A no-break space where a space goes, an invisible character, a NUL or a lone surrogate
inside a token, or a fullwidth form: the rules are written for plain text and missed
each one. Such a text comes back in plain form with the secret masked; a text that
hides nothing keeps its characters.
"""

from __future__ import annotations

import pytest

from bli_memory.core.memory.redaction import Redacted, redact
from tests.secret_corpus import SECRETS, chars

TOKEN = "ghp_" + chars(36, start=950)


@pytest.mark.parametrize(("text", "kept"), [
    ("Authorization: Bearer\u00a0" + chars(40, start=951), "Authorization: Bearer [REDACTED:bearer_token]"),
    ("password:\u00a0Xk9#mP2$vL", "password: [REDACTED:env_secret]"),
    (TOKEN[:20] + "\u00ad" + TOKEN[20:], "[REDACTED:github_token]"),
    (TOKEN[:20] + "\u200b" + TOKEN[20:], "[REDACTED:github_token]"),
    (TOKEN[:20] + "\x00" + TOKEN[20:], "[REDACTED:github_token]"),
    (TOKEN[:20] + "\ud800" + TOKEN[20:], "[REDACTED:github_token]"),
    (TOKEN.replace("_", "\uff3f"), "[REDACTED:github_token]"),
])
def test_odd_characters_do_not_hide_a_secret(text: str, kept: str) -> None:
    result = redact(text)
    assert result == Redacted(kept, 1)
    assert redact(result.text) == Redacted(kept, 0)


def test_a_text_that_hides_nothing_keeps_its_characters() -> None:
    text = "Hello\u00a0world \u2014 nothing\u200b here, caf\u00e9 \uff08ok\uff09"
    assert redact(text) == Redacted(text, 0)


def test_every_corpus_secret_with_no_break_spaces_is_masked() -> None:
    leaked = [fmt for fmt, line, secret in SECRETS
              if " " in line and secret.replace(" ", "\u00a0") in redact(line.replace(" ", "\u00a0")).text]
    assert leaked == []


def test_a_secret_masked_by_the_first_pass_stays_masked_when_the_plain_pass_finds_another() -> None:
    """The zero-width space glues the key id to an X in plain form, where no rule sees it."""
    key_id = "AKIA" + chars(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", start=960)
    text = key_id + "\u200bX secret:\u00a0Zx9kQ2mP7vL4"
    result = redact(text)
    assert result.masked == 2 and "AKIA" not in result.text and "Zx9kQ2mP7vL4" not in result.text


def test_only_the_hiding_characters_change_in_a_text_that_hid_a_secret() -> None:
    text = "password:\u00a0hunter2XYZ! and x\u00b2 + y\u00b2, \ufb01chier \u2122 \u2026"
    kept = "password: [REDACTED:env_secret] and x\u00b2 + y\u00b2, \ufb01chier \u2122 \u2026"
    assert redact(text).text == kept
