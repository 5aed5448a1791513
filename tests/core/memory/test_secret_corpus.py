"""The secret corpus against :func:`redact`: every format masked, every benign line kept.

The corpus (``tests/secret_corpus.py``) holds the formats people paste into sessions,
including those that once reached the disk in the clear (Mailgun, Okta SSWS, Mailchimp,
a password in prose, Splunk, ``sshpass -p``, ``az login -p``, PuTTY key files, a Heroku
key after "heroku", values with ``{`` or ``(``, unclosed quotes, ``--password word``),
and benign lines that once were altered (``curl -u http://app``, a session UUID).
"""

from __future__ import annotations

import json

import pytest

from bli_memory.core.memory.redaction import redact
from tests.secret_corpus import BENIGN, SECRETS


def test_the_corpus_is_large_enough() -> None:
    assert len({fmt for fmt, _, _ in SECRETS}) >= 80
    assert len(BENIGN) >= 30


def test_a_labelled_assignment_keeps_its_name_and_counts_once() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    result = redact(f"Staging DB credentials: DB_PASSWORD=hunter2-Xk9q and token {token}")
    assert result.text == ("Staging DB credentials: DB_PASSWORD=[REDACTED:env_secret] "
                           "and token [REDACTED:github_token]")
    assert result.masked == 2


@pytest.mark.parametrize(("fmt", "line", "secret"), SECRETS, ids=[c[0] for c in SECRETS])
def test_every_format_is_masked(fmt: str, line: str, secret: str) -> None:
    result = redact(line)
    assert secret not in result.text
    assert result.masked >= 1
    assert redact(result.text).text == result.text


NEIGHBOUR = "We decided to keep the port at 8443 for the staging proxy."


@pytest.mark.parametrize(("fmt", "line", "secret"), SECRETS, ids=[c[0] for c in SECRETS])
def test_a_masked_format_leaves_the_lines_around_it_alone(fmt: str, line: str, secret: str) -> None:
    for before, after in (("", "https://hooks.example.com: ok"), ("Authorization: none", "")):
        text = "\n".join(x for x in (before, NEIGHBOUR, line, NEIGHBOUR, after) if x)
        out = redact(text).text
        assert secret not in out
        assert out.startswith("\n".join(x for x in (before, NEIGHBOUR) if x) + "\n")
        assert out.endswith("\n" + "\n".join(x for x in (NEIGHBOUR, after) if x))


@pytest.mark.parametrize("line", BENIGN)
def test_benign_lines_stay_verbatim(line: str) -> None:
    assert redact(line).text == line


# Tool output arrives as JSON: the line as a tool printed it, inside a string literal
# (escaped, ASCII or not), the same nested once more, and a command as a JSON value.
JSON_FORMS = {
    "escaped output": lambda line: json.dumps({"stdout": "output:\n" + line + "\ndone"}),
    "escaped, not ascii": lambda line: json.dumps({"stdout": line + "\n"}, ensure_ascii=False),
    "escaped twice": lambda line: json.dumps(json.dumps({"stdout": line})),
    "a json value": lambda line: json.dumps({"command": line}),
    "pretty-printed": lambda line: json.dumps({"env": [line, "PATH=/usr/bin"]}, indent=2),
    "a wide column": lambda line: '{"cmd":' + " " * 12 + json.dumps(line) + "}",
    "a raw tab": lambda line: '{"stdout": "a\tb\\n' + json.dumps(line)[1:-1] + '\\n"}',
    "escaped four times": lambda line: json.dumps(json.dumps(json.dumps(json.dumps({"stdout": line})))),
}


@pytest.mark.parametrize("form", JSON_FORMS)
def test_every_format_is_masked_inside_json_strings(form: str) -> None:
    wrap = JSON_FORMS[form]
    leaked = []
    for fmt, line, secret in SECRETS:
        out = redact(wrap(line)).text
        escaped = json.dumps(secret)[1:-1]
        if secret in out or escaped in out or redact(out).text != out:
            leaked.append(fmt)
    assert leaked == [], leaked


# Still broken: the pass over the raw text reads a value glued to its quote behind a
# prefix (:=\", b\", []byte(\") as running over the escaped quote. Nothing leaks there.
KNOWN_INVALID = {"colon equals no space", "env bytes literal", "env []byte literal"}


def test_a_json_text_quoted_in_another_stays_valid_json_once_masked() -> None:
    broken = []
    for fmt, line, _ in SECRETS:
        out = redact(json.dumps({"content": json.dumps({"env": line})})).text
        try:
            json.loads(json.loads(out)["content"])
        except ValueError:
            broken.append(fmt)
    assert set(broken) <= KNOWN_INVALID, broken


def test_a_literal_with_nothing_to_mask_stays_byte_for_byte() -> None:
    for text in ('{"a": "line one\\nline two \\u00e9 \\/ ok"}', '"unterminated \\n', '"\\x not json"'):
        assert redact(text).text == text
    masked = redact('{"out": "caf\\u00e9\\npassword = In0texquI6xSls"}').text
    assert masked == '{"out": "caf\\u00e9\\npassword = [REDACTED:env_secret]"}', masked


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("curl -u http://app", "curl -u http://app"),
        # A label whose value is an assignment: the name stays, the secret counts once.
        ("Staging DB credentials: DB_PASSWORD=hunter2-Xk9q and more",
         "Staging DB credentials: DB_PASSWORD=[REDACTED:env_secret] and more"),
        ("curl -u admin:x9!k https://app", "curl -u admin:[REDACTED:basic_auth] https://app"),
        (
            "Exporting session: 0a1b2c3d-4e5f-6789-abcd-ef0123456789",
            "Exporting session: 0a1b2c3d-4e5f-6789-abcd-ef0123456789",
        ),
        ('"sessionKey": "0a1b2c3d-4e5f-6789-abcd-ef0123456789"', '"sessionKey": "[REDACTED:generic_secret]"'),
        (
            "heroku app id 0a1b2c3d-4e5f-6789-abcd-ef0123456789",
            "heroku app id 0a1b2c3d-4e5f-6789-abcd-ef0123456789",
        ),
        ("heroku token 0a1b2c3d-4e5f-6789-abcd-ef0123456789", "heroku token [REDACTED:heroku_api_key]"),
        ("pass it with --password and the prompt asks", "pass it with --password and the prompt asks"),
        ("the wifi password is kkcglHpqS&3.", "the wifi password is [REDACTED:prose_password]."),
        # A passphrase is masked whole, up to the end of its clause; a pointer stays.
        ("password: correct horse battery staple", "password: [REDACTED:prose_password]"),
        ('passphrase is "correct horse battery staple"', 'passphrase is "[REDACTED:prose_password]"'),
        (
            "the vpn password is Tr4mpoline cactus harbor, then log in",
            "the vpn password is [REDACTED:prose_password], then log in",
        ),
        ("the password is correct horse battery staple", "the password is correct horse battery staple"),
        ("password: see the vault", "password: see the vault"),
        ("the password is 12 characters long", "the password is 12 characters long"),
        ('x = input("Password: "); print("done")', 'x = input("Password: "); print("done")'),
        # Assignments with spaces and shell builtins keep the name; a path stays.
        ("DB_PASS = s3cr3tvalue", "DB_PASS = [REDACTED:env_secret]"),
        ("set -gx DB_PASSWORD s3cr3tvalue", "set -gx DB_PASSWORD [REDACTED:env_secret]"),
        ("PWD = /home/x/project", "PWD = /home/x/project"),
        ("env PGPASS=s3cr3tvalue psql", "env PGPASS=[REDACTED:env_secret] psql"),
        # A value token is masked whole, '&' and all; a passphrase after '=' whole.
        ("I set TOKEN = okapiZ9& in prod", "I set TOKEN = [REDACTED:env_secret] in prod"),
        ("PASSWORD=correct horse battery staple", "PASSWORD=[REDACTED:env_secret]"),
        ("password: Tr4mpoline cactus harbor for the vpn", "password: [REDACTED:env_secret] for the vpn"),
        ("password = Tr4mpoline cactus harbor for the vpn", "password = [REDACTED:env_secret] for the vpn"),
        ("user: admin, password: kangaroo", "user: admin, password: [REDACTED:prose_password]"),
        # A connection string keeps its other fields.
        ("Password=walrus;Server=.", "Password=[REDACTED:env_secret];Server=."),
    ],
)
def test_formats_keep_what_surrounds_the_secret(text: str, expected: str) -> None:
    assert redact(text).text == expected
