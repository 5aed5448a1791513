"""Tests for ``bli_memory.core.memory.redaction``.

Every credential below is fake and assembled at runtime from a prefix and a
generated body, so this file holds no string that a secret scanner would flag.
"""

from __future__ import annotations

import dataclasses
import json
import re
import string
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bli_memory.core.memory import redaction
from bli_memory.core.memory.redaction import DEFAULT_RULES, Redacted, RedactionRule, _apply_rules, redact

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
BASE64 = ALNUM + "+/"


def chars(n: int, alphabet: str = ALNUM, *, start: int = 0) -> str:
    """Return ``n`` characters cycling through ``alphabet`` from ``start``."""
    return "".join(alphabet[(start + i) % len(alphabet)] for i in range(n))


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# A stand-in password, spliced into the tables below at "§" so that no
# assignment in this file carries a literal secret.
PW = "hunter" + "2"


def with_pw(text: str) -> str:
    return text.replace("§", PW)


PEM_BODY = "\n".join(chars(64, BASE64, start=i) for i in range(5)) + "\n" + "AB=="


def pem(label: str, body: str = PEM_BODY, newline: str = "\n") -> str:
    dashes = "-" * 5
    return newline.join(
        [
            f"{dashes}BEGIN {label}{dashes}",
            *body.split("\n"),
            f"{dashes}END {label}{dashes}",
        ]
    )


JWT = ".".join(
    [
        "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ",
        chars(43, URLSAFE, start=7),
    ]
)

# (kind, fake credential); the whole credential must disappear.
PROVIDER_TOKENS: list[tuple[str, str]] = [
    ("anthropic_api_key", "sk-ant-api03-" + chars(93, URLSAFE) + "AA"),
    ("anthropic_api_key", "sk-ant-admin01-" + chars(93, URLSAFE, start=3) + "AA"),
    ("openai_api_key", "sk-proj-" + chars(156, URLSAFE)),
    ("openai_api_key", "sk-svcacct-" + chars(74, URLSAFE, start=5)),
    ("openai_api_key", "sk-" + chars(48)),
    ("openai_api_key", "sk-" + chars(32, HEX)),
    ("openrouter_api_key", "sk-or-v1-" + chars(64, HEX)),
    ("github_token", "ghp_" + "A" * 36),
    ("github_token", "gho_" + chars(36)),
    ("github_token", "ghu_" + chars(36, start=9)),
    ("github_token", "ghs_" + chars(36, start=17)),
    ("github_token", "ghr_" + chars(36, start=29)),
    ("github_token", "github_pat_11" + chars(20, UPPER_DIGITS) + "_" + chars(59)),
    ("gitlab_token", "glpat-" + chars(20, URLSAFE)),
    ("gitlab_token", "glrt-" + chars(20, URLSAFE, start=4)),
    ("slack_token", "xoxb-" + "123456789012-1234567890123-" + chars(24)),
    ("slack_token", "xoxp-" + "123456789012-123456789012-1234567890123-" + chars(32, HEX)),
    ("slack_token", "xoxa-2-" + chars(40, start=2)),
    ("slack_token", "xoxr-" + chars(40, start=4)),
    ("slack_token", "xoxs-" + chars(40, start=6)),
    ("slack_token", "xapp-1-A0123456789-1234567890123-" + chars(64, HEX)),
    ("aws_access_key_id", "AKIA" + chars(16, UPPER_DIGITS, start=3)),
    ("aws_access_key_id", "ASIA" + chars(16, UPPER_DIGITS, start=11)),
    ("google_api_key", "AIza" + chars(35, URLSAFE)),
    ("google_oauth_client_secret", "GOCSPX-" + chars(28, URLSAFE)),
    ("google_oauth_token", "ya29." + chars(120, URLSAFE)),
    ("stripe_key", "sk_live_" + chars(24)),
    ("stripe_key", "rk_live_" + chars(24, start=5)),
    ("stripe_key", "pk_live_" + chars(24, start=10)),
    ("stripe_key", "sk_test_" + chars(24, start=15)),
    ("stripe_key", "whsec_" + chars(32)),
    ("npm_token", "npm_" + chars(36)),
    ("pypi_token", "pypi-" + "AgEIcHlwaS5vcmc" + chars(70, URLSAFE)),
    ("huggingface_token", "hf_" + chars(34, string.ascii_letters)),
    ("twilio_api_key", "SK" + chars(32, HEX)),
    ("sendgrid_api_key", "SG." + chars(22, URLSAFE) + "." + chars(43, URLSAFE)),
    ("digitalocean_token", "dop_v1_" + chars(64, HEX)),
    ("digitalocean_token", "doo_v1_" + chars(64, HEX, start=3)),
    ("shopify_token", "shpat_" + chars(32, HEX)),
    ("atlassian_api_token", "ATATT3" + chars(186, URLSAFE)),
    ("databricks_token", "dapi" + chars(32, HEX)),
    ("groq_api_key", "gsk_" + chars(52)),
    ("xai_api_key", "xai-" + chars(80)),
    ("replicate_api_token", "r8_" + chars(37)),
    ("perplexity_api_key", "pplx-" + chars(48)),
    ("linear_api_key", "lin_api_" + chars(40)),
    ("postman_api_key", "PMAK-" + chars(24, HEX) + "-" + chars(34, HEX)),
    ("vault_token", "hvs." + chars(90, URLSAFE)),
    ("doppler_token", "dp.pt." + chars(43)),
    ("sentry_token", "sntryu_" + chars(64, HEX)),
    ("supabase_key", "sbp_" + chars(40, HEX)),
    ("notion_token", "ntn_" + chars(46)),
    ("notion_token", "secret_" + chars(43)),
    ("grafana_token", "glsa_" + chars(32) + "_" + chars(8, HEX)),
    ("square_token", "sq0atp-" + chars(22, URLSAFE)),
    ("langsmith_api_key", "lsv2_pt_" + chars(32, HEX) + "_" + chars(10, HEX)),
    ("telegram_bot_token", "123456789:AA" + chars(33, URLSAFE)),
    ("discord_bot_token", "M" + chars(25) + "." + chars(6) + "." + chars(27, URLSAFE)),
    ("age_secret_key", "AGE-SECRET-KEY-1" + chars(58, UPPER_DIGITS)),
    ("jwt", JWT),
]


def _id(case: tuple[str, str]) -> str:
    return case[0]


# ---------------------------------------------------------------------------
# Provider credentials
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", PROVIDER_TOKENS, ids=_id)
@pytest.mark.parametrize(
    "template",
    [
        "{}",
        "here is the key: {} (keep it safe)",
        'config = {{"key": "{}"}}',
        "export SOME_VAR={}\n",
        "`{}`",
        "<{}>",
        "curl -d 'value%3D{}'",
    ],
)
def test_provider_credentials_are_replaced_by_typed_placeholders(
    case: tuple[str, str], template: str
) -> None:
    kind, token = case
    result = redact(template.format(token))
    assert result.text == template.format(placeholder(kind))
    assert result.masked == 1


@pytest.mark.parametrize("case", PROVIDER_TOKENS, ids=_id)
def test_provider_credentials_inside_longer_words_are_not_touched(
    case: tuple[str, str],
) -> None:
    # Our prefix rules want a word boundary: a token glued to the end of a longer word is
    # most likely not one. The vendor rule set may still know the format without a
    # boundary; then the whole word goes, so no part of the token is kept.
    text = "xyz" + case[1]
    assert _apply_rules(DEFAULT_RULES, text) == (text, 0)
    kept = redact(text).text
    assert kept == text or re.fullmatch(r"\[REDACTED:[a-z0-9_]+\]", kept), kept


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "posting to https://hooks.slack.com/services/T0123ABCD/B0123ABCD/" + chars(24),
            "posting to https://hooks.slack.com/services/" + placeholder("slack_webhook"),
        ),
        (
            "https://discord.com/api/webhooks/123456789012345678/" + chars(68, URLSAFE),
            "https://discord.com/api/webhooks/123456789012345678/" + placeholder("discord_webhook"),
        ),
    ],
)
def test_webhook_urls_keep_the_host_and_lose_the_secret_path(text: str, expected: str) -> None:
    assert redact(text) == Redacted(expected, 1)


def test_aws_secret_access_key_keeps_its_name() -> None:
    secret = chars(40, BASE64, start=11)
    text = f"[default]\naws_access_key_id = AKIA{chars(16, UPPER_DIGITS)}\n"
    text += f"aws_secret_access_key = {secret}\n"
    result = redact(text)
    assert secret not in result.text
    assert "aws_secret_access_key = " + placeholder("aws_secret_access_key") in (result.text)
    assert "aws_access_key_id = " + placeholder("aws_access_key_id") in result.text
    assert result.masked == 2


def test_azure_connection_string_keeps_everything_but_the_key() -> None:
    key = chars(86, BASE64) + "=="
    text = f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={key};"
    result = redact(text)
    assert result.text == (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + placeholder("azure_key") + ";"
    )


# ---------------------------------------------------------------------------
# Private keys
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    [
        "PRIVATE KEY",
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "DSA PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_private_key_blocks_are_replaced_whole(label: str, newline: str) -> None:
    block = pem(label, newline=newline)
    text = f"Here is the key:{newline}{block}{newline}Use it wisely."
    result = redact(text)
    assert result.text == (f"Here is the key:{newline}{placeholder('private_key')}{newline}Use it wisely.")
    assert result.masked == 1


def test_encrypted_pem_headers_are_part_of_the_block() -> None:
    body = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF\n\n"
    body += PEM_BODY
    assert redact(pem("RSA PRIVATE KEY", body)) == Redacted(placeholder("private_key"), 1)


def test_private_key_escaped_inside_json_is_replaced() -> None:
    # A service-account file pasted as JSON keeps its newlines escaped.
    key = pem("PRIVATE KEY").replace("\n", "\\n") + "\\n"
    text = '{"type": "service_account", "private_key": "' + key + '"}'
    result = redact(text)
    assert result.text == (
        '{"type": "service_account", "private_key": "' + placeholder("private_key") + '\\n"}'
    )
    assert result.masked == 1


def test_truncated_private_key_loses_header_and_base64_lines_only() -> None:
    block = pem("OPENSSH PRIVATE KEY").rsplit("\n", 2)[0]  # END line cut off
    text = f"$ head -4 ~/.ssh/id_ed25519\n{block}\nThat was the top of the file."
    result = redact(text)
    assert result.text == (
        "$ head -4 ~/.ssh/id_ed25519\n" + placeholder("private_key") + "\nThat was the top of the file."
    )
    for line in PEM_BODY.split("\n"):
        assert line not in result.text


@pytest.mark.parametrize("label", ["PUBLIC KEY", "CERTIFICATE", "OPENSSH PUBLIC KEY"])
def test_public_material_is_not_a_private_key(label: str) -> None:
    text = pem(label)
    assert redact(text) == Redacted(text, 0)


# ---------------------------------------------------------------------------
# HTTP credentials and URLs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Authorization: Bearer " + chars(40, URLSAFE),
            "Authorization: Bearer " + placeholder("bearer_token"),
        ),
        (
            "curl -H 'Authorization: Bearer abc.def-123' https://api.example.com",
            "curl -H 'Authorization: Bearer " + placeholder("bearer_token") + "' https://api.example.com",
        ),
        (
            '{"Authorization": "Bearer ' + chars(30) + '"}',
            '{"Authorization": "Bearer ' + placeholder("bearer_token") + '"}',
        ),
        (
            "authorization: bearer shorttok.",
            "authorization: bearer " + placeholder("bearer_token") + ".",
        ),
        (
            "the request carried Bearer " + chars(24, start=3) + " in a header",
            "the request carried Bearer " + placeholder("bearer_token") + " in a header",
        ),
        (
            "Authorization: Basic " + chars(20, BASE64, start=30) + "==",
            "Authorization: Basic " + placeholder("basic_auth"),
        ),
        (
            "Authorization: Token " + chars(40, HEX, start=3),
            "Authorization: Token " + placeholder("auth_header"),
        ),
        (
            "curl -u admin:" + PW + " https://api.example.com",
            "curl -u admin:" + placeholder("basic_auth") + " https://api.example.com",
        ),
        (
            "X-Api-Key: " + chars(32, HEX),
            "X-Api-Key: " + placeholder("header_secret"),
        ),
        (
            "PRIVATE-TOKEN: " + chars(24, start=30),
            "PRIVATE-TOKEN: " + placeholder("header_secret"),
        ),
        (
            'curl -H "X-Auth-Token: ' + chars(20) + '" https://api.example.com',
            'curl -H "X-Auth-Token: ' + placeholder("header_secret") + '" https://api.example.com',
        ),
    ],
)
def test_http_credentials(text: str, expected: str) -> None:
    assert redact(text) == Redacted(expected, 1)


@pytest.mark.parametrize(
    ("user_part", "password", "host_part"),
    [
        ("postgres://app:", PW + "-Pa55", "@db.internal:5432/app"),
        ("mysql://root:", PW, "@127.0.0.1/test"),
        ("redis://:", PW, "@cache:6379/0"),
        ("mongodb+srv://svc:", "Zx9!" + PW, "@cluster0.example.net/db"),
        ("amqp://guest:", PW, "@rabbit/"),
        ("https://bob:", "pa@" + PW, "@example.com/path?q=1"),
        ("git clone https://x-access-token:", PW, "@github.com/o/r.git"),
    ],
)
def test_url_password_keeps_scheme_user_and_host(user_part: str, password: str, host_part: str) -> None:
    result = redact(user_part + password + host_part)
    assert result.text == user_part + placeholder("url_password") + host_part
    assert result.masked == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "GET https://api.example.com/v1/items?access_token=" + PW + "&page=2",
            "GET https://api.example.com/v1/items?access_token=" + placeholder("query_secret") + "&page=2",
        ),
        (
            "https://store.example.net/blob?sv=2022&sig=" + chars(40, BASE64) + "%3D",
            "https://store.example.net/blob?sv=2022&sig=" + placeholder("query_secret"),
        ),
        (
            "https://example.com/cb?client_secret=" + PW,
            "https://example.com/cb?client_secret=" + placeholder("query_secret"),
        ),
    ],
)
def test_secret_query_parameters(text: str, expected: str) -> None:
    assert redact(text) == Redacted(expected, 1)


# ---------------------------------------------------------------------------
# Named secrets: env, config, code, JSON
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SECRET=§", "SECRET=[REDACTED:env_secret]"),
        ("API_KEY=§", "API_KEY=[REDACTED:env_secret]"),
        ("DB_PASSWORD: §", "DB_PASSWORD: [REDACTED:env_secret]"),
        ('export TOKEN="§"', 'export TOKEN="[REDACTED:env_secret]"'),
        ('export TOKEN="§ with spaces"', 'export TOKEN="[REDACTED:env_secret]"'),
        ("SESSION_SECRET=abc", "SESSION_SECRET=[REDACTED:env_secret]"),
        ("export GH_TOKEN='§'", "export GH_TOKEN='[REDACTED:env_secret]'"),
        ("  - POSTGRES_PASSWORD=§", "  - POSTGRES_PASSWORD=[REDACTED:env_secret]"),
        ("ENV APP_SECRET_KEY=§", "ENV APP_SECRET_KEY=[REDACTED:env_secret]"),
        ("set OPENAI_APIKEY=§", "set OPENAI_APIKEY=[REDACTED:env_secret]"),
        ("MYSQL_PASSWD=§  # local only", "MYSQL_PASSWD=[REDACTED:env_secret]  # local only"),
        ("CLIENT_SECRET = §", "CLIENT_SECRET = [REDACTED:env_secret]"),
        ("AWS_ACCESS_KEY=§", "AWS_ACCESS_KEY=[REDACTED:env_secret]"),
        ("GPG_PASSPHRASE=§", "GPG_PASSPHRASE=[REDACTED:env_secret]"),
        ("private_key=§", "private_key=[REDACTED:env_secret]"),
        ("GOOGLE_CREDENTIALS=§", "GOOGLE_CREDENTIALS=[REDACTED:env_secret]"),
        ("JWT_SIGNING_KEY=§", "JWT_SIGNING_KEY=[REDACTED:env_secret]"),
        ("password = §", "password = [REDACTED:env_secret]"),
        ("spring.datasource.password=§", "spring.datasource.password=[REDACTED:env_secret]"),
        ("  password: §", "  password: [REDACTED:env_secret]"),
        (
            "docker run -e API_KEY=§ -e DEBUG=1 app",
            "docker run -e API_KEY=[REDACTED:env_secret] -e DEBUG=1 app",
        ),
        ("OPENAI_API_KEY=§ python app.py", "OPENAI_API_KEY=[REDACTED:env_secret] python app.py"),
        ("mytool --password=§ --user bob", "mytool --password=[REDACTED:env_secret] --user bob"),
        (
            "mytool --db-password 'x' --api-token=§",
            "mytool --db-password 'x' --api-token=[REDACTED:env_secret]",
        ),
        (
            "2024-05-01 INFO login user=bob token=§ ok",
            "2024-05-01 INFO login user=bob token=[REDACTED:env_secret] ok",
        ),
        ('curl -d "user=bob&password=§"', 'curl -d "user=bob&password=[REDACTED:query_secret]"'),
        ("my password: §!", "my password: [REDACTED:env_secret]"),
        ('password = "§"', 'password = "[REDACTED:env_secret]"'),
        ("api_key: str = '§'", "api_key: str = '[REDACTED:env_secret]'"),
        ('const apiKey = "§";', 'const apiKey = "[REDACTED:env_secret]";'),
        ('client = Client(token="§")', 'client = Client(token="[REDACTED:env_secret]")'),
        ("{ accessToken: '§' }", "{ accessToken: '[REDACTED:env_secret]' }"),
        ('$env:API_KEY = "§"', '$env:API_KEY = "[REDACTED:env_secret]"'),
        ('secret := "§"', 'secret := "[REDACTED:env_secret]"'),
        ('"password": "§"', '"password": "[REDACTED:json_secret]"'),
        ("{'api_key': '§'}", "{'api_key': '[REDACTED:json_secret]'}"),
        (
            '{"db": {"user": "app", "password": "§\\"q"}}',
            '{"db": {"user": "app", "password": "[REDACTED:json_secret]"}}',
        ),
        ('"X-API-Key": "§"', '"X-API-Key": "[REDACTED:json_secret]"'),
        ("'password' => '§'", "'password' => '[REDACTED:json_secret]'"),
        ('{\\"client_secret\\": \\"§\\"}', '{\\"client_secret\\": \\"[REDACTED:json_secret]\\"}'),
        ("import os\npassword = §\nprint(1)", "import os\npassword = [REDACTED:env_secret]\nprint(1)"),
        ("API_KEY=§\r\nDEBUG=1\r\n", "API_KEY=[REDACTED:env_secret]\r\nDEBUG=1\r\n"),
        # Of several targets, the value at the secret name's place goes, not the first.
        ('user, password := "bob", "§"', 'user, password := "bob", "[REDACTED:env_secret]"'),
        ('user, password = "bob", "§"', 'user, password = "bob", "[REDACTED:env_secret]"'),
        ('login(user, password="§", timeout=5)', 'login(user, password="[REDACTED:env_secret]", timeout=5)'),
        # A semicolon that ends the value is kept.
        ("export DB_PASS=§; make", "export DB_PASS=[REDACTED:env_secret]; make"),
        ("PASSWORD=§;", "PASSWORD=[REDACTED:env_secret];"),
        (
            "[pypi]\nusername = __token__\npassword = §",
            "[pypi]\nusername = __token__\npassword = [REDACTED:env_secret]",
        ),
    ],
)
def test_named_secrets_keep_the_name_and_lose_the_value(text: str, expected: str) -> None:
    assert redact(with_pw(text)) == Redacted(expected, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "session_id = '" + chars(32, HEX, start=5) + "'",
            "session_id = '[REDACTED:generic_secret]'",
        ),
        (
            "signature=" + chars(44, BASE64, start=40),
            "signature=[REDACTED:generic_secret]",
        ),
        (
            '"sessionKey": "' + chars(32, start=45) + '"',
            '"sessionKey": "[REDACTED:generic_secret]"',
        ),
        (
            "AUTH=" + chars(24, UPPER_DIGITS, start=20) + " # from the vendor",
            "AUTH=[REDACTED:generic_secret] # from the vendor",
        ),
    ],
)
def test_high_entropy_values_of_weaker_names_are_generic_secrets(text: str, expected: str) -> None:
    assert redact(text) == Redacted(expected, 1)


@pytest.mark.parametrize(
    "text",
    [
        "cache_key = 'user:42:profile'",
        "primary_key = id",
        "keyboard_layout = us-intl-altgr-dead-keys",
        "session = requests.Session()",
        "passes = 3",
    ],
)
def test_weaker_names_with_ordinary_values_are_untouched(text: str) -> None:
    assert redact(text) == Redacted(text, 0)


def test_several_secrets_are_counted() -> None:
    text = "\n".join(
        [
            "OPENAI_API_KEY=sk-proj-" + chars(48, URLSAFE),
            "DATABASE_URL=postgres://app:" + PW + "@db/app",
            "GITHUB_TOKEN=ghp_" + chars(36),
            "DEBUG=true",
            "SESSION_SECRET=abcdef",
        ]
    )
    result = redact(text)
    assert result.masked == 4
    assert result.text == "\n".join(
        [
            "OPENAI_API_KEY=" + placeholder("openai_api_key"),
            "DATABASE_URL=postgres://app:" + placeholder("url_password") + "@db/app",
            "GITHUB_TOKEN=" + placeholder("github_token"),
            "DEBUG=true",
            "SESSION_SECRET=" + placeholder("env_secret"),
        ]
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The token is masked first; the value around it then swallows it.
        ("TOKEN=ghp_" + chars(36) + ")x", "TOKEN=[REDACTED:env_secret]"),
        ("&password=#)0", "&password=[REDACTED:query_secret]"),
        # Nothing is left of the value but the placeholder and an auth scheme.
        ("password = 'Bearer ghp_" + chars(36) + "'", "password = 'Bearer [REDACTED:github_token]'"),
    ],
)
def test_a_secret_masked_in_two_steps_counts_once(text: str, expected: str) -> None:
    assert redact(text) == Redacted(expected, 1)


# ---------------------------------------------------------------------------
# What must survive
# ---------------------------------------------------------------------------

PROSE = [
    "Set the API key in the dashboard, then restart the server.",
    "The token expires after an hour; refresh it with the CLI.",
    "We need a password reset flow for users who forget their password.",
    "Use a Bearer token in the Authorization header, as RFC 6750 says.",
    "Bearer authentication is simple: the client sends the token.",
    "Rotate the client secret every 90 days and store it in the vault.",
    "The private key lives in ~/.ssh/id_ed25519 and never leaves the laptop.",
    "Passwordless login uses magic links instead of passwords.",
    "Secrets: keep them out of git. Tokens: short-lived. Keys: rotated.",
    "The API key: OpenAI-compatible endpoints accept it too.",
    "JWTs look like eyJ... and carry claims; never log them.",
    "Connect to localhost:5432 as user postgres, database app.",
    "See https://example.com:8443/docs/auth#tokens for the details.",
    "Email me at dev@example.com about the secret santa list.",
    "Set OPENAI_API_KEY in your shell before running the tests.",
    "The sk- prefix marks OpenAI keys and ghp_ marks GitHub tokens.",
    "A tokenizer splits text into tokens; max_tokens caps the output.",
    "git@github.com:acme/secret-project.git is the remote.",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_about_secrets_is_untouched(text: str) -> None:
    assert redact(text) == Redacted(text, 0)


CODE = [
    "password: str",
    "    api_key: Optional[str] = None",
    "    token: str | None = None",
    "  apiKey: string;",
    "  password?: string;",
    "    password: SecretStr",
    "token: String,",
    "token = os.environ['GITHUB_TOKEN']",
    'client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])',
    "client = OpenAI(api_key=api_key)",
    "self.api_key = api_key",
    "    self.token = token",
    "api_key = settings.openai_api_key",
    "SECRET_KEY = get_random_secret_key()",
    "token = await getToken();",
    "const apiKey = process.env.OPENAI_API_KEY;",
    "  apiKey: process.env.API_KEY,",
    "  password: password,",
    "secret = secrets.token_hex(32)",
    'x = input("Password: "); y = "abc"',
    'print("token: " + token)',
    'logger.info("secret: %s", redacted)',
    "fetch(url, {credentials: 'include'})",
    "if password == expected_password:",
    "if token != '':",
    "token_count = len(tokens)",
    "headers = {'Authorization': f'Bearer {token}'}",
    'auth = {"Authorization": "Bearer " + token}',
    "access_token = response.json()['access_token']",
    "password = getpass.getpass()",
    "TOKENIZERS_PARALLELISM=false",
    "max_tokens=4096",
    "MAX_TOKENS: 4096",
]


@pytest.mark.parametrize("text", CODE)
def test_code_that_handles_secrets_is_untouched(text: str) -> None:
    assert redact(text) == Redacted(text, 0)


BENIGN = [
    "TOKEN_TTL=3600",
    "ACCESS_TOKEN_EXPIRE_MINUTES=30",
    "PASSWORD_MIN_LENGTH=12",
    "SECRET_KEY_FILE=/run/secrets/django_key",
    "TOKEN_URL=https://auth.example.com/oauth/token",
    "GITHUB_TOKEN_PATH=~/.config/gh/token",
    "SECRET_NAME=prod/db/credentials",
    "passwordMinLength: 12",
    "API_KEY=",
    'API_KEY=""',
    "API_KEY=${API_KEY}",
    "DB_PASSWORD=$DB_PASSWORD",
    "TOKEN=$(gh auth token)",
    "TOKEN=%GH_TOKEN%",
    "OPENAI_API_KEY=<your-key>",
    "OPENAI_API_KEY=your-api-key-here",
    "OPENAI_API_KEY=YOUR_API_KEY",
    "OPENAI_API_KEY=sk-...",
    "ANTHROPIC_API_KEY=sk-ant-***",
    "SECRET=changeme",
    "PASSWORD=***",
    "TOKEN=xxxxxxxx",
    "API_TOKEN=null",
    "password: ''",
    'token: "${{ secrets.GITHUB_TOKEN }}"',
    "password: {{ vault_db_password }}",
    "postgres://user:${DB_PASSWORD}@localhost:5432/app",
    "postgres://user:" + "password" + "@localhost:5432/app",
    "https://example.com/cb?token=$TOKEN",
    "Authorization: Bearer $TOKEN",
    "Authorization: Bearer <token>",
    "Authorization: Bearer YOUR_TOKEN",
    "curl -u $USER:$PASSWORD https://x",
    "API_KEY=[REDACTED:env_secret]",
]


@pytest.mark.parametrize("text", BENIGN)
def test_values_that_are_obviously_not_secrets_are_left_alone(text: str) -> None:
    assert redact(text) == Redacted(text, 0)


# ---------------------------------------------------------------------------
# Idempotence
# ---------------------------------------------------------------------------

ALL_INPUTS = [
    *(token for _, token in PROVIDER_TOKENS),
    *(f"key: {token}\nDB_PASSWORD={token}" for _, token in PROVIDER_TOKENS),
    pem("RSA PRIVATE KEY"),
    pem("OPENSSH PRIVATE KEY").rsplit("\n", 2)[0],
    '{"private_key": "' + pem("PRIVATE KEY").replace("\n", "\\n") + '\\n"}',
    "password = 'Bearer " + chars(30) + "'",
    "TOKEN=postgres://u:" + PW + "@h/db",
    "url = 'https://u:' + pw + '@h'",
    'API_KEY="sk-proj-' + chars(40, URLSAFE) + '" other=1',
    *PROSE,
    *CODE,
    *BENIGN,
]


@pytest.mark.parametrize("text", ALL_INPUTS)
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    twice = redact(once.text)
    assert twice == Redacted(once.text, 0)


# ---------------------------------------------------------------------------
# Robustness
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00",
        "\ud800",
        "password=\udfff\x00" + "ghp_" + chars(36),
        "token=\ud83d",
        "\x00".join(token for _, token in PROVIDER_TOKENS),
        "é" * 1000 + "パスワード=秘密123",
    ],
)
def test_never_raises_on_odd_strings(text: str) -> None:
    result = redact(text)
    assert isinstance(result.text, str)
    assert result.masked >= 0


def test_lone_surrogates_and_nul_do_not_shield_a_secret() -> None:
    token = "ghp_" + chars(36)
    result = redact(f"\ud800\x00 {token} \x00\udfff")
    assert token not in result.text
    assert result.text == f"\ud800\x00 {placeholder('github_token')} \x00\udfff"


def test_a_megabyte_of_text_is_fine() -> None:
    token = "glpat-" + chars(20, URLSAFE)
    text = ("lorem ipsum dolor sit amet " * 40_000) + token
    result = redact(text)
    assert result.masked == 1
    assert token not in result.text


PEM_HEADER = "-" * 5 + "BEGIN PRIVATE KEY" + "-" * 5
ADVERSARIAL: dict[str, Callable[[int], str]] = {
    # Each builds its text at 1/k of the full size (k=1: the whole text).
    "letters": lambda k: "a" * (100_000 // k),
    "equals": lambda k: "=" * (100_000 // k),
    "jwt-like": lambda k: "eyJ" + "a." * (50_000 // k),
    "pem-without-end-then-1mb": lambda k: PEM_HEADER + "x" * (1_000_000 // k),
    "pem-without-end-then-1mb-lines": lambda k: PEM_HEADER + ("\n" + "A" * 64) * (16_000 // k),
    # 600 KB of headers: redaction is linear here (about 50 us a header).
    "pem-headers": lambda k: PEM_HEADER * (20_000 // k),
    "dashes": lambda k: "-" * (100_000 // k),
    "url-like": lambda k: "://a:" * (20_000 // k),
    "url-at": lambda k: "://a:@" * (16_000 // k),
    "query": lambda k: "?" + "token_" * (16_000 // k),
    "name-run": lambda k: "TOKEN_" * (16_000 // k),
    "dash-name-run": lambda k: "sk-" * (33_000 // k),
    "header-run": lambda k: "x-api-key" + "-a" * (50_000 // k),
    "assign-chain": lambda k: "token=" * (16_000 // k),
    "colon-chain": lambda k: "token:" * (16_000 // k),
    "pw-quote-chain": lambda k: "pw='" * (25_000 // k),
    "pwd-colon-chain": lambda k: "db_pwd:" * (14_000 // k),
    "weak-assign-chain": lambda k: "key=" * (25_000 // k),
    "weak-plus-chain": lambda k: "+key=" * (20_000 // k),
    "quote-chain": lambda k: 'token="' * (14_000 // k),
    "quoted-name-chain": lambda k: '"token: "' * (11_000 // k),
    "unclosed-quote": lambda k: 'password="' + "a" * (100_000 // k),
    "escaped-json": lambda k: '"password": "' + "\\" * (100_000 // k),
    "bearer-chain": lambda k: "Bearer " * (14_000 // k),
    "authorization-chain": lambda k: "Authorization: " * (6_000 // k),
    "long-line-value": lambda k: "password: " + "_token" * (16_000 // k) + "1",
    "identifier-chain": lambda k: "password = " + "a." * (50_000 // k),
    "percent": lambda k: "%3D" * (33_000 // k),
    "at-signs": lambda k: "a@" * (50_000 // k),
    "camel": lambda k: "aB" * (50_000 // k) + "Token=",
    "newlines": lambda k: "\n" * (100_000 // k),
    "spaces": lambda k: " " * (100_000 // k),
    "heroku-run": lambda k: "heroku " * (14_000 // k),
    "heroku-hex": lambda k: "heroku " + "0123abcd-" * (11_000 // k),
    "putty-lines": lambda k: "PuTTY-User-Key-File-3: x" + ("\n" + "A" * 64) * (16_000 // k),
    "putty-headers": lambda k: "PuTTY-User-Key-File-3:" * (4_000 // k),
    "prose-password": lambda k: "the password for " + "a " * (50_000 // k),
    "prose-password-is": lambda k: "password is " * (8_000 // k),
    "prose-token-is": lambda k: "token is " * (10_000 // k) + "a" * (10_000 // k),
    "sshpass-run": lambda k: "sshpass " * (12_000 // k) + "-p",
    "flag-run": lambda k: "--password " * (9_000 // k),
    "session-uuid-run": lambda k: "session: 01234567-89ab-cdef-0123-456789abcdef " * (2_000 // k),
    "passphrase-label": lambda k: "password: " + "word " * (20_000 // k),
    "passphrase-run-on": lambda k: "password is x9! " + "ab " * (30_000 // k),
    "passphrase-quote": lambda k: 'password is "' + "a" * (100_000 // k),
    "passphrase-label-chain": lambda k: "db_password: " * (8_000 // k),
    "fish-set-run": lambda k: "set -x TOKEN " * (8_000 // k),
    "markup-open-run": lambda k: "<password>" * (10_000 // k),
    "markup-unclosed": lambda k: "<password>" + "a" * (100_000 // k),
    "markup-pair-run": lambda k: 'key="password" ' * (6_000 // k),
    "k8s-name-run": lambda k: "name: DB_PASSWORD\n" * (5_000 // k),
    "markup-property-run": lambda k: '<p name="password">' * (5_000 // k),
    "markup-value-first-run": lambda k: 'value="x" ' * (8_000 // k),
    "markup-lines-run": lambda k: "<password>\n" * (8_000 // k),
    "k8s-value-first-run": lambda k: "value: x\n" * (8_000 // k),
    "k8s-flow-run": lambda k: "name: DB_PASSWORD, " * (5_000 // k),
    "typographic-quote": lambda k: "password is \u201c" + "a" * (100_000 // k),
    "passphrase-assign": lambda k: "password = " + "word " * (20_000 // k),
    "passphrase-glued": lambda k: "PASSWORD=" + "word " * (20_000 // k),
    "name-is-run": lambda k: "DB_PASS is " * (8_000 // k),
    "compound-pass-run": lambda k: "db_pass=" * (12_000 // k),
    "spaced-equals-run": lambda k: "token = " * (12_000 // k),
    "connection-string-run": lambda k: ";Password=" * (9_000 // k),
    "head-noun-run": lambda k: "token_" * (16_000 // k) + "=x1",
    "user-secrets-run": lambda k: "dotnet user-secrets set " * (5_000 // k),
    "user-secrets-sections": lambda k: "user-secrets set " + "Db:" * (30_000 // k) + "Password",
    "keytool-flag-run": lambda k: "-storepass " * (9_000 // k),
    "keytool-new-run": lambda k: "keytool -new" * (9_000 // k),
    "credential-call-run": lambda k: 'NetworkCredential("a", ' * (5_000 // k),
    "env-setter-run": lambda k: 'os.Setenv("TOKEN", ' * (5_000 // k),
    "semicolon-run": lambda k: "DB_PASS=" + ";" * (100_000 // k),
    "multiple-assignment-run": lambda k: "token  ,  " * (10_000 // k) + ':= "a"',
    "multiple-assignment-values": lambda k: "a, b, c, token := " + '"x", ' * (20_000 // k),
    # JSON strings: escaped quotes on a line that never closes, a truncated doubly
    # escaped tool result, many values that read like lines, and recovery-phrase words.
    "unclosed-escaped-quotes": lambda k: '"' + '\\"' * (40_000 // k),
    "truncated-escaped-json": lambda k: json.dumps({"content": json.dumps(
        {f"key{i}": f"value {i}" for i in range(1_600 // k)})})[:-3],
    "json-line-values": lambda k: "".join(f'"k{i}": "set x = {i}", ' for i in range(4_000 // k)),
    "seed-word-run": lambda k: "abandon " * (30_000 // k),
    "cookie-pairs": lambda k: "Cookie: " + "a=b; " * (20_000 // k),
}


def _cpu_seconds(text: str, tries: int) -> float:
    """The least CPU time of ``tries`` redactions of ``text`` (the least is the one a busy
    machine disturbed least)."""
    best = float("inf")
    for _ in range(tries):
        started = time.process_time()
        redact(text)
        best = min(best, time.process_time() - started)
    return best


#: How much larger the whole text is than the small one, and the growth in CPU time that
#: fails: linear work grows about 8x (measured: 4.3-10.4x over these texts), quadratic
#: work 64x, so 24 leaves room for noise on a loaded machine without letting a quadratic
#: pattern through.
GROWTH = 8
MAX_COST_GROWTH = 24.0
#: Below this CPU time a measure is mostly the clock and the scheduler, so the small text
#: counts as taking at least this long.
FLOOR_S = 0.005


@pytest.mark.parametrize("build", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_no_catastrophic_backtracking(build: Callable[[int], str]) -> None:
    # A guard against quadratic or exponential patterns: how the cost grows with the
    # text, never how long it takes, so a slow or busy machine changes nothing.
    small, whole = build(GROWTH), build(1)
    assert len(whole) > GROWTH * len(small) * 0.9
    growth = _cpu_seconds(whole, 2) / max(_cpu_seconds(small, 5), FLOOR_S)
    assert growth < MAX_COST_GROWTH, f"{GROWTH}x the text cost {growth:.1f}x the CPU time"


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=200)
SEPARATORS = st.sampled_from([" ", "\n", "\t", " \n", "\r\n"])


def _token_strategy(
    prefix: str, alphabet: str, size: int, max_size: int | None = None
) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=size, max_size=max_size or size).map(
        lambda body: prefix + body
    )


GENERATED_TOKENS = st.one_of(
    _token_strategy("ghp_", ALNUM, 36, 40),
    _token_strategy("github_pat_", ALNUM + "_", 82),
    _token_strategy("sk-ant-api03-", URLSAFE, 20, 95),
    _token_strategy("sk-proj-", URLSAFE, 20, 60),
    _token_strategy("sk-", ALNUM, 48),
    _token_strategy("glpat-", URLSAFE, 20, 26),
    _token_strategy("xoxb-", ALNUM + "-", 10, 50),
    _token_strategy("AKIA", UPPER_DIGITS, 16),
    _token_strategy("AIza", URLSAFE, 35),
    _token_strategy("sk_live_", ALNUM, 24, 99),
    _token_strategy("npm_", ALNUM, 36),
    _token_strategy("hf_", string.ascii_letters, 34),
    _token_strategy("pypi-AgEIcHlwaS5vcmc", URLSAFE, 60, 120),
    _token_strategy("SG.", URLSAFE, 22).flatmap(lambda head: _token_strategy(head + ".", URLSAFE, 43)),
    _token_strategy("dop_v1_", HEX, 64),
    _token_strategy("eyJ", URLSAFE, 10, 40)
    .flatmap(lambda head: _token_strategy(head + ".eyJ", URLSAFE, 10, 40))
    .flatmap(lambda head: _token_strategy(head + ".", URLSAFE, 10, 43)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=ANY_TEXT)
def test_never_raises_and_is_idempotent_on_any_text(text: str) -> None:
    once = redact(text)
    assert redact(once.text) == Redacted(once.text, 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=ANY_TEXT,
    after=ANY_TEXT,
    token=GENERATED_TOKENS,
    left=SEPARATORS,
    right=SEPARATORS,
)
def test_an_embedded_token_never_survives(before: str, after: str, token: str, left: str, right: str) -> None:
    result = redact(before + left + token + right + after)
    assert token not in result.text
    if "[REDACTED:" not in before + after:
        assert result.masked >= result.text.count("[REDACTED:") >= 1
    assert redact(result.text) == Redacted(result.text, 0)


# Fragments that meet each other in real transcripts, so that random
# sequences of them exercise how the rules interact.
FRAGMENTS = [
    " ",
    "\n",
    "\t",
    "=",
    ":",
    ": ",
    " = ",
    '"',
    "'",
    "`",
    "\\",
    "\\n",
    "@",
    "/",
    "://",
    "?",
    "&",
    "#",
    "$",
    "${",
    "}",
    "(",
    ")",
    "[",
    "]",
    "{",
    ",",
    ";",
    ".",
    "-",
    "--",
    "_",
    "*",
    "...",
    "<",
    ">",
    "1",
    "42",
    "abc",
    "hunter2",
    "user",
    "host",
    "password",
    "PASSWORD",
    "token",
    "TOKEN",
    "api_key",
    "apiKey",
    "SECRET",
    "secret",
    "key",
    "session",
    "export ",
    "Bearer ",
    "Basic ",
    "Authorization",
    "https",
    "postgres",
    "eyJ",
    "eyJhbGciOi",
    "ghp_",
    "A" * 20,
    chars(36),
    "sk-",
    "sk-proj-",
    "AKIA",
    "-----BEGIN ",
    "PRIVATE KEY",
    "-----",
    "-----END ",
    "[REDACTED:env_secret]",
    "str",
    "None",
    "os.environ",
    "%3D",
    "-u",
    "X-Api-Key",
]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
def test_rule_interactions_are_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once.text) == Redacted(once.text, 0)


# ---------------------------------------------------------------------------
# The rule table and the API
# ---------------------------------------------------------------------------


def test_public_api() -> None:
    assert redaction.__all__ == sorted(redaction.__all__)
    assert set(redaction.__all__) == {
        "DEFAULT_RULES", "Redacted", "RedactionRule", "active_rules", "redact", "rules_with_plugins"
    }


def test_results_and_rules_are_frozen() -> None:
    result = redact("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.masked = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_RULES[0].kind = "other"  # type: ignore[misc]


@pytest.mark.parametrize("rule", DEFAULT_RULES, ids=lambda rule: rule.kind)
def test_every_default_rule_is_well_formed(rule: RedactionRule) -> None:
    assert re.fullmatch(r"[a-z][a-z0-9_]*", rule.kind)
    assert isinstance(rule.pattern, re.Pattern)
    if isinstance(rule.group, str):
        assert rule.group in rule.pattern.groupindex
    elif isinstance(rule.group, int):
        assert 0 <= rule.group <= rule.pattern.groups


def test_rules_run_most_specific_first() -> None:
    kinds = [rule.kind for rule in DEFAULT_RULES]
    assert kinds[0] == "private_key"
    assert kinds.index("github_token") < kinds.index("jwt") < kinds.index("bearer_token")
    assert kinds.index("bearer_token") < kinds.index("url_password")
    assert kinds.index("url_password") < kinds.index("env_secret")
    assert kinds[-1] == "generic_secret"


def test_rules_can_be_extended() -> None:
    employee_id = RedactionRule("employee_id", re.compile(r"\bEMP-(?P<id>[0-9]{8})\b"), "id")
    text = "EMP-12345678 pushed ghp_" + chars(36)
    result = redact(text, rules=(*DEFAULT_RULES, employee_id))
    assert result == Redacted(
        "EMP-" + placeholder("employee_id") + " pushed " + placeholder("github_token"),
        2,
    )


def test_rules_can_be_replaced() -> None:
    text = "ghp_" + chars(36)
    assert redact(text, rules=()) == Redacted(text, 0)
    only_jwt = tuple(rule for rule in DEFAULT_RULES if rule.kind == "jwt")
    assert redact(text + " " + JWT, rules=only_jwt) == Redacted(text + " " + placeholder("jwt"), 1)


def test_a_custom_rule_without_group_masks_the_whole_match() -> None:
    rule = RedactionRule("ticket", re.compile(r"TICKET-\d+"))
    assert redact("see TICKET-42 now", rules=(rule,)) == Redacted("see " + placeholder("ticket") + " now", 1)


_PW = "Sup3r" + "S3cret" + "Kube"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"kubectl create secret generic db --from-literal=password={_PW}", "cli_password"),
        (f"docker login -u bob -p {_PW} registry.example.com", "cli_password"),
        (f"mysql -uroot -p{_PW} shop", "cli_password"),
        (f"helm upgrade app ./chart --set db.password={_PW} --set replicas=3", "env_secret"),
        (f"mytool --api-key {_PW} --verbose", "cli_password"),
        (f"secrets:\n  token: |\n    {_PW}\n    second-line-{_PW}\n  other: 1\n", "yaml_block_secret"),
    ],
)
def test_command_line_and_block_scalar_secrets(text: str, kind: str) -> None:
    out = redact(text)
    assert _PW not in out.text and f"[REDACTED:{kind}]" in out.text


@pytest.mark.parametrize(
    "text",
    ["the --password flag is required", "docker login --password-stdin -u bob",
     "mkdir -p build && docker run -p 8080:80 nginx", "psql -p 5432 -h db", "ps aux | grep token"],
)
def test_command_lines_without_secrets_stay(text: str) -> None:
    assert redact(text) == Redacted(text, 0)


def test_an_ampersand_inside_a_secret_is_masked_but_ends_it_before_a_query_parameter() -> None:
    from bli_memory.core.memory.redaction import redact

    out = redact("the password: Tr0ub4dor&3 works").text
    assert "Tr0ub4dor" not in out and "&3" not in out and out.endswith(" works")
    out = redact("open https://x.example/cb?password=s3cr3t&user=bob now").text
    assert "s3cr3t" not in out and "&user=bob now" in out
    out = redact("see token=abc123&next=1 ok").text
    assert "abc123" not in out and "&next=1 ok" in out


@pytest.mark.parametrize(
    ("metadata", "expected", "masked"),
    [
        ({"env": [{"name": "DB_PASSWORD", "value": "walrus"}]},
         {"env": [{"name": "DB_PASSWORD", "value": "[REDACTED:env_secret]"}]}, 1),
        ({"key": "DbPassword", "value": "walrus"},
         {"key": "DbPassword", "value": "[REDACTED:env_secret]"}, 1),
        ({"name": "DB_PASSWORD", "value": 123456789},
         {"name": "DB_PASSWORD", "value": "[REDACTED:metadata_secret]"}, 1),
        ({"env": [{"name": "LOG_LEVEL", "value": "info"}]},
         {"env": [{"name": "LOG_LEVEL", "value": "info"}]}, 0),
        ({"name": "DB_PASSWORD", "value": "${DB_PASSWORD}"},
         {"name": "DB_PASSWORD", "value": "${DB_PASSWORD}"}, 0),
    ],
)
def test_metadata_value_is_judged_with_the_name_beside_it(
    metadata: dict[str, object], expected: dict[str, object], masked: int
) -> None:
    from bli_memory.core.memory.stored_secrets import masked_metadata

    assert masked_metadata(metadata) == (expected, masked)
