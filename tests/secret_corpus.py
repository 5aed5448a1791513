"""A corpus of secrets in the shapes people paste into coding sessions, and benign lines.

Used by the corpus-driven redaction tests (``tests/core/memory/test_secret_corpus.py``,
``tests/core/test_secrets_on_disk.py``) and by ``bench/redaction.py``, which compares
our rules with detect-secrets on it.

Every credential is fake and assembled at import time from a prefix and a generated
body, so this file holds no string that a secret scanner would flag.

- :data:`SECRETS`: ``(format, line, secret)``. ``secret`` is the part that must never
  reach the disk; the line around it is how it shows up in a session.
- :data:`BENIGN`: lines that hold no secret and must be kept verbatim: commit SHAs,
  image digests, UUIDs in logs, prose about keys, code that handles secrets.
"""

from __future__ import annotations

import random
import string

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
BASE64 = ALNUM + "+/"


def chars(n: int, alphabet: str = ALNUM, *, start: int = 0) -> str:
    """``n`` pseudo-random characters of ``alphabet``, the same for the same arguments.

    Different arguments give unrelated strings, so no secret of the corpus is part of
    another one or of a benign line (checked below).
    """
    rng = random.Random(repr((n, alphabet, start)))
    return "".join(rng.choice(alphabet) for _ in range(n))


def uuid(start: int = 0) -> str:
    """A UUID-shaped string of lower-case hex."""
    h = chars(32, HEX, start=start)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


DASHES = "-" * 5
PEM_BODY = "\n".join(chars(64, BASE64, start=i) for i in range(4))
SSH_BODY = "\n".join(chars(64, BASE64, start=10 + i) for i in range(4))
JWT = ".".join(
    [
        "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0",
        chars(43, URLSAFE, start=7),
    ]
)
PUTTY_PRIVATE = "\n".join(chars(64, BASE64, start=40 + i) for i in range(3))
PUTTY_KEY = "\n".join(
    [
        "PuTTY-User-Key-File-3: ssh-ed25519",
        "Encryption: none",
        "Comment: deploy@build",
        "Public-Lines: 2",
        chars(64, BASE64, start=3),
        chars(20, BASE64, start=9),
        "Private-Lines: 3",
        PUTTY_PRIVATE,
        "Private-MAC: " + chars(64, HEX, start=11),
    ]
)


def _p(n: int) -> str:
    """A password-like value: letters, digits and one symbol, distinct per ``n``."""
    return chars(9, string.ascii_letters, start=n) + "&" + str(n % 10)


# (format, line as pasted, the secret inside it)
SECRETS: list[tuple[str, str, str]] = []


def _add(fmt: str, line: str, secret: str) -> None:
    assert secret in line, fmt
    SECRETS.append((fmt, line, secret))


# -- provider tokens, recognised by prefix and length --------------------------------------
for fmt, token in [
    ("anthropic", "sk-ant-api03-" + chars(93, URLSAFE) + "AA"),
    ("openai project", "sk-proj-" + chars(120, URLSAFE)),
    ("openai legacy", "sk-" + chars(48)),
    ("openrouter", "sk-or-v1-" + chars(64, HEX)),
    ("github classic", "ghp_" + chars(36, start=1)),
    ("github oauth", "gho_" + chars(36, start=2)),
    ("github fine-grained", "github_pat_11" + chars(20, UPPER_DIGITS) + "_" + chars(59)),
    ("gitlab", "glpat-" + chars(20, URLSAFE)),
    ("slack bot", "xoxb-123456789012-1234567890123-" + chars(24)),
    ("slack app", "xapp-1-A0123456789-1234567890123-" + chars(64, HEX)),
    ("aws access key id", "AKIA" + chars(16, UPPER_DIGITS, start=3)),
    ("google api key", "AIza" + chars(35, URLSAFE)),
    ("google oauth secret", "GOCSPX-" + chars(28, URLSAFE)),
    ("google oauth token", "ya29." + chars(100, URLSAFE)),
    ("stripe live", "sk_live_" + chars(24)),
    ("stripe restricted", "rk_live_" + chars(24, start=5)),
    ("stripe webhook", "whsec_" + chars(32)),
    ("npm", "npm_" + chars(36)),
    ("pypi", "pypi-AgEIcHlwaS5vcmc" + chars(70, URLSAFE)),
    ("hugging face", "hf_" + chars(34, string.ascii_letters)),
    ("twilio", "SK" + chars(32, HEX)),
    ("sendgrid", "SG." + chars(22, URLSAFE) + "." + chars(43, URLSAFE)),
    ("digitalocean", "dop_v1_" + chars(64, HEX)),
    ("shopify", "shpat_" + chars(32, HEX)),
    ("atlassian", "ATATT3" + chars(186, URLSAFE)),
    ("databricks", "dapi" + chars(32, HEX)),
    ("groq", "gsk_" + chars(52)),
    ("xai", "xai-" + chars(80)),
    ("replicate", "r8_" + chars(37)),
    ("perplexity", "pplx-" + chars(48)),
    ("linear", "lin_api_" + chars(40)),
    ("postman", "PMAK-" + chars(24, HEX) + "-" + chars(34, HEX)),
    ("hashicorp vault", "hvs." + chars(90, URLSAFE)),
    ("doppler", "dp.pt." + chars(43)),
    ("sentry", "sntryu_" + chars(64, HEX)),
    ("supabase", "sbp_" + chars(40, HEX)),
    ("notion", "ntn_" + chars(46)),
    ("grafana service account", "glsa_" + chars(32) + "_" + chars(8, HEX)),
    ("square", "sq0atp-" + chars(22, URLSAFE)),
    ("langsmith", "lsv2_pt_" + chars(32, HEX) + "_" + chars(10, HEX)),
    ("telegram bot", "123456789:AA" + chars(33, URLSAFE)),
    ("discord bot", "M" + chars(25) + "." + chars(6) + "." + chars(27, URLSAFE)),
    ("age secret key", "AGE-SECRET-KEY-1" + chars(58, UPPER_DIGITS)),
    ("jwt", JWT),
    ("mailgun", "key-" + chars(32, HEX, start=4)),
    ("mailchimp", chars(32, HEX, start=6) + "-us6"),
    ("artifactory", "AKCp" + chars(69, ALNUM, start=7)),
]:
    _add(fmt, f"here is the key: {token} (keep it safe)", token)

# -- keys and webhooks ---------------------------------------------------------------------
_add(
    "pem private key",
    f"{DASHES}BEGIN RSA PRIVATE KEY{DASHES}\n{PEM_BODY}\n{DASHES}END RSA PRIVATE KEY{DASHES}",
    PEM_BODY.split("\n")[1],
)
_add(
    "openssh private key",
    f"{DASHES}BEGIN OPENSSH PRIVATE KEY{DASHES}\n{SSH_BODY}\n{DASHES}END OPENSSH PRIVATE KEY{DASHES}",
    SSH_BODY.split("\n")[2],
)
_add("putty key file", PUTTY_KEY, PUTTY_PRIVATE.split("\n")[1])
_add(
    "slack webhook",
    "https://hooks.slack.com/services/T0000/B0000/" + chars(24, start=50),
    chars(24, start=50),
)
_add("discord webhook", "https://discord.com/api/webhooks/123456/" + chars(60, URLSAFE), chars(60, URLSAFE))

# -- HTTP ----------------------------------------------------------------------------------
_add("bearer header", "Authorization: Bearer " + chars(40, URLSAFE, start=3), chars(40, URLSAFE, start=3))
_add(
    "basic header", "Authorization: Basic " + chars(24, BASE64, start=30) + "==", chars(24, BASE64, start=30)
)
_add("token header", "Authorization: Token " + chars(40, HEX, start=3), chars(40, HEX, start=3))
_add(
    "okta ssws",
    "curl -H 'Authorization: SSWS 00" + chars(40, URLSAFE, start=8) + "' https://acme.okta.com",
    chars(40, URLSAFE, start=8),
)
_add("splunk hec", 'curl -H "Authorization: Splunk ' + uuid(3) + '" https://splunk:8088', uuid(3))
_add("x-api-key header", "X-Api-Key: " + chars(32, HEX, start=9), chars(32, HEX, start=9))
_add("curl -u", "curl -u admin:" + _p(1) + " https://api.example.com", _p(1))
_add("url password", "postgres://app:" + _p(2) + "@db.internal:5432/app", _p(2))
_add("query token", "https://example.com/cb?access_token=" + chars(30, start=4), chars(30, start=4))

# -- named secrets -------------------------------------------------------------------------
_add("env file", "DB_PASSWORD=" + _p(3), _p(3))
_add("export", 'export GITHUB_TOKEN="' + chars(30, start=13) + '"', chars(30, start=13))
_add("yaml", "  password: " + _p(4), _p(4))
_add("json", '{"client_secret": "' + chars(30, start=21) + '"}', chars(30, start=21))
_add("python", 'api_key = "' + chars(28, start=17) + '"', chars(28, start=17))
_add("toml", 'token = "' + chars(28, start=19) + '"', chars(28, start=19))
_add(
    "aws secret access key",
    "aws_secret_access_key = " + chars(40, BASE64, start=2),
    chars(40, BASE64, start=2),
)
_add(
    "azure connection string",
    "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
    + chars(64, BASE64, start=6)
    + "==;EndpointSuffix=core.windows.net",
    chars(64, BASE64, start=6),
)
_add("docker env flag", "docker run -e API_TOKEN=" + chars(24, start=8) + " app", chars(24, start=8))
_add("yaml block scalar", "token: |\n  " + chars(48, start=9), chars(48, start=9))
_add("generic session key", '"sessionKey": "' + chars(32, start=45) + '"', chars(32, start=45))
_add("heroku env", "HEROKU_API_KEY=" + uuid(7), uuid(7))
_add("heroku uuid in prose", "my heroku api key is " + uuid(9), uuid(9))
_add("value with brace", "password = Xy{9kQ!" + chars(6), "Xy{9kQ!" + chars(6))
_add("value with paren", "DB_PASSWORD=pa(ss)W0rd" + chars(4), "pa(ss)W0rd" + chars(4))
_add("unclosed quote", 'password = "' + _p(5) + " and then the line goes on", _p(5))
_add("ini unclosed quote", "SMTP_PASSWORD='" + _p(6), _p(6))

# -- command lines -------------------------------------------------------------------------
_add("docker login", "docker login -u ci -p " + _p(7) + " registry.example.com", _p(7))
_add("mysql -p", "mysql -uroot -p" + _p(8) + " app", _p(8))
_add("sshpass", "sshpass -p " + _p(9) + " ssh deploy@host", _p(9))
_add("sshpass glued", "sshpass -p'" + _p(10) + "' scp a host:", _p(10))
_add("az login", "az login -u ci@example.com -p " + _p(11), _p(11))
_add("password flag word", "psql --password kangaroo --host db", "kangaroo")
_add("password flag digits", "tool --password=" + _p(12), _p(12))
_add("kubectl literal", "kubectl create secret generic db --from-literal=password=" + _p(13), _p(13))
_add("helm set", "helm install app --set db.password=" + _p(14), _p(14))
_add("redis-cli -a", "redis-cli -h cache -a " + _p(15) + " ping", _p(15))
_add("pw pair", "login with user=bob pw=" + _p(50) + " on the vpn", _p(50))
_add("pwd pair", "db_host=db.internal db_pwd: '" + _p(51) + "'", _p(51))
_add("pwd upper", "DB_PWD=" + _p(52), _p(52))
_add("PWD upper", "PWD=hunter2", "hunter2")
_add("export PWD upper", "export PWD=" + _p(53), _p(53))
_add("PWD quoted", "PWD='" + _p(54) + "'", _p(54))
_add("PWD yaml", "PWD: " + _p(55), _p(55))
_add("PASS upper", "DB_PASS=" + _p(56), _p(56))
_add("PASS export", "export SMTP_PASS=" + _p(57), _p(57))
_add("Pass camel", "smtpPass = '" + _p(58) + "'", _p(58))

# -- prose ---------------------------------------------------------------------------------
_add("wifi password prose", "the staging wifi password is kkcglHpqS&3", "kkcglHpqS&3")
_add("password prose colon", "btw my password: " + _p(16) + " for the vpn", _p(16))
_add("passphrase prose", "the gpg passphrase was " + _p(17), _p(17))
_add("password prose is colon", "the wifi password is: " + _p(40), _p(40))
_add("password dash", "Password - " + _p(41), _p(41))
_add("netrc", "machine api.example.com login bob password " + _p(42), _p(42))
_add("pgpass", "db.example.com:5432:app:bob:" + _p(43), _p(43))
_add("sudo -S", "echo '" + _p(44) + "' | sudo -S apt-get update", _p(44))
_add("python requests auth", 'r = requests.get(url, auth=("bob", "' + _p(45) + '"))', _p(45))
_add("openssl -k", "openssl enc -aes-256-cbc -k " + _p(46) + " -in secrets.tar", _p(46))
_HRKU = "HRKU-" + chars(60, URLSAFE, start=47)
_add("heroku HRKU", "export HEROKU_API_KEY=" + _HRKU, _HRKU)


# Lines that must come out exactly as they went in.
BENIGN: list[str] = [
    "commit 3f9c2a7e8b1d4c6f0a5e9b2d7c4f1a8e6b3d0c9f",
    "Merged a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 into main",
    "image: ghcr.io/acme/api@sha256:" + chars(64, HEX, start=5),
    "docker pull python@sha256:" + chars(64, HEX, start=9),
    "Exporting session: " + uuid(1),
    "session " + uuid(2) + " resumed",
    "session_id=" + uuid(4),
    "request id " + uuid(5) + " took 120 ms",
    "request_id: " + uuid(6),
    '{"sessionId": "' + uuid(12) + '", "type": "user"}',
    "X-Request-Id: " + uuid(13),
    "session-key rotation ran for session " + uuid(14),
    "job " + uuid(8) + " finished",
    "trace_id=" + uuid(10) + " span_id=" + chars(16, HEX),
    "2026-11-30T10:00:00Z INFO run " + uuid(11) + " started",
    "the API key lives in the dashboard",
    "set the API key in the dashboard, then restart",
    "the token expires after an hour",
    "the password is stored in the vault",
    "the password is 12 characters long",
    "passwords must be rotated every 90 days",
    "curl -u http://app",
    "curl -u https://app.internal/health",
    "curl -u admin: https://app",
    "Bearer tokens are sent in the Authorization header",
    "TOKENIZERS_PARALLELISM=false",
    "max_tokens=4096",
    "TOKEN_TTL=3600",
    "API_KEY=${API_KEY}",
    "OPENAI_API_KEY=<your-key>",
    "password = getpass.getpass()",
    "headers = {'Authorization': f'Bearer {token}'}",
    "access_token = response.json()['access_token']",
    "const apiKey = process.env.OPENAI_API_KEY;",
    "sha512-" + chars(40, BASE64, start=3) + "==",
    "md5sum: d41d8cd98f00b204e9800998ecf8427e",
    "heroku apps:info --app shop-staging",
    "psql --password --host db",
    "docker login --password-stdin ghcr.io",
    "the password is hunter, said nobody",
    "We decided to keep the port at 8443 for the staging proxy.",
    "Use `uv run pytest -q` to run the tests.",
    "PWD=/home/alice/src/api",
    "OLDPWD=/tmp",
    "echo $PWD",
    "cd $PWD && ls",
    "PWD=$HOME/src/api",
    "export PWD=/srv/app",
    "PASS_RATE=0.95",
    "BYPASS_CACHE=1",
    "first_pass=true",
    "OLDPWD=$PWD",
    "PWD=~/src/api",
    "PWD=`pwd`",
    "PWD=$(pwd)",
    "PWD=C:\\Users\\alice\\src",
    "PWD: /home/alice/src/api",
    "cd $(pwd)/build && make",
    "pwd = os.getcwd()",
    "pw = getpass.getpass()",
]


def _check_unique() -> None:
    for fmt, _, secret in SECRETS:
        others = [line for f, line, _ in SECRETS if f != fmt] + BENIGN
        assert not any(secret in line for line in others), (fmt, [x[:40] for x in others if secret in x])


_check_unique()
