"""Metadata values judged with their keys (:mod:`bli_memory.core.memory.redaction.keys`)."""

from __future__ import annotations

import pytest

from bli_memory.core.memory.redaction.keys import masked_under_key, names_a_secret


@pytest.mark.parametrize("key", ["password", "DB_PASSWORD", "api_key", "apiKey", "token", "secret",
                                 "pwd", "PGPASS", "pin", "card_pin", "cardPin", "passcode", "CVV",
                                 "Authorization", "Proxy-Authorization", "cookie", "Set-Cookie"])
def test_keys_that_name_a_secret(key: str) -> None:
    assert names_a_secret(key)


@pytest.mark.parametrize("key", ["token_ttl", "max_tokens", "owner", "spin", "pinned", "password_url",
                                 "BYPASS", "session_id", "authorization_url", "cookie_domain",
                                 "token_usage", "password_policy", "api_key_env", "version_pin",
                                 "PasswordPolicy", "passwordEncoder", "tokenStore", "passwordHash"])
def test_keys_that_do_not(key: str) -> None:
    assert not names_a_secret(key)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("secret", "x", ("[REDACTED:metadata_secret]", 1)),
        ("token", "abc", ("[REDACTED:env_secret]", 1)),
        ("pin", 4242, ("[REDACTED:metadata_secret]", 1)),
        ("token", {"a": 1}, ("[REDACTED:metadata_secret]", 1)),
        ("password", None, (None, 0)),
        ("password", False, (False, 0)),
        ("password", "", ("", 0)),
        ("password", "${DB_PASSWORD}", ("${DB_PASSWORD}", 0)),
        ("password", "***", ("***", 0)),
        ("pwd", "/srv/app", ("/srv/app", 0)),
        ("owner", 4242, (4242, 0)),
        ("pin", "4242", ("[REDACTED:metadata_secret]", 1)),
        ("card_pin", "12 34", ("[REDACTED:metadata_secret]", 1)),
        ("pin", "numpy==1.26", ("numpy==1.26", 0)),
        ("version_pin", "main", ("main", 0)),
        ("Authorization", "Basic dXNlcjpwYXNzd29yZA==", ("Basic [REDACTED:basic_auth]", 1)),
        ("Cookie", "sid=abc", ("[REDACTED:metadata_secret]", 1)),
    ],
)
def test_one_rule_for_every_value_under_a_secret_key(key: str, value: object, expected: tuple) -> None:
    assert masked_under_key(key, value) == expected
