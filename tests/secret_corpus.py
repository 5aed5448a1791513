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

import json
import random
import string
from pathlib import Path

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

def _w(n: int) -> str:
    """A word-like password with digits and no symbol, like ``s3cr3tvalue``, distinct per ``n``."""
    lower = string.ascii_lowercase
    return chars(4, lower, start=n) + str(n % 10) + chars(5, lower, start=n + 1)


# -- assignments with spaces, shell builtins and short names (once stored in the clear) ------
_add("PGPASS", "PGPASS=" + _w(60), _w(60))
_add("PASS spaced", "DB_PASS = " + _w(61), _w(61))
_add("PASS_WORD", "PASS_WORD=" + _w(62), _w(62))
_add("pwd spaced", "db_pwd = " + _w(63), _w(63))
_add("PWD spaced", "PWD = " + _w(64), _w(64))
_add("fish set PWD", "set -x PWD " + _w(65), _w(65))
_add("fish set -gx", "set -gx DB_PASSWORD " + _w(66), _w(66))
_add("fish set quoted", "set -Ux API_TOKEN '" + _w(67) + "'", _w(67))
_add("csh setenv", "setenv DB_PASS " + _w(68), _w(68))
_add("export PGPASS", "export PGPASS=" + _w(69), _w(69))
_add("fish set in a code span", "run `set -x API_TOKEN " + _w(117) + "` first", _w(117))
_add("fish set at a prompt", "$ set -gx DB_PASSWORD " + _w(118), _w(118))
_add("csh setenv after &&", "cd app && setenv DB_PASS " + _w(119) + " && make", _w(119))
_add("csh setenv after ;", "source env.csh; setenv API_TOKEN " + _w(120), _w(120))
_add("fish set in a bullet", "- set -x SECRET_KEY " + _w(121), _w(121))
_add("export PASS spaced", "export DB_PASS = " + _w(70), _w(70))
_add("fish set after ; and", "true; and set -x API_KEY " + _w(160), _w(160))
_add("fish set after ; or", "test -f .env; or set -x API_KEY " + _w(161), _w(161))
_add("csh setenv at a % prompt", "% setenv DB_PASS " + _w(162), _w(162))
_add("fish set at a fish prompt", "user@host ~> set -x API_KEY " + _w(163), _w(163))
_add("csh setenv at a bracket prompt", "[user@host ~]$ setenv DB_PASS " + _w(164), _w(164))
_add("fish -c single quoted", "fish -c 'set -x API_KEY " + _w(165) + "; make'", _w(165))
_add("fish -c double quoted", 'fish -c "set -x API_KEY ' + _w(166) + '"', _w(166))
_add("fish set in quotes", "'set -x API_TOKEN " + _w(167) + "'", _w(167))
_add("fish set in a numbered list", "1. set -x API_TOKEN " + _w(168), _w(168))
_add("fish set after a plus", "+ set -x API_TOKEN " + _w(169), _w(169))
_add("fish set after a bullet", "\u2022 set -x API_TOKEN " + _w(170), _w(170))
_add("fish set after a label", "Run: set -x API_TOKEN " + _w(171), _w(171))
_add("csh setenv lower-case name", "setenv db_pass " + _w(172), _w(172))
_add("fish set in a subshell", "echo $(set -x API_KEY " + _w(173) + ")", _w(173))
_add("env PGPASS", "env PGPASS=" + _w(71) + " psql -h db", _w(71))
_add("env PASS_WORD", "env DB_HOST=db PASS_WORD=" + _w(72) + " ./run", _w(72))
_add("ROOTPASS letters", "ROOTPASS=wallabyhouse", "wallabyhouse")
# -- passphrases of several words: the whole phrase, not its first word ---------------------
# -- a password word with no verb before a made-up value -------------------------------------
_add("prose with password", "login reporter with password " + _p(150) + ".", _p(150))
_add("prose comma password", "user reporter, password " + _p(151), _p(151))
_add("prose password to", "changed the root password to " + _p(152) + " yesterday", _p(152))
_add("prose password mid-sentence", "its password " + _p(153) + " works again", _p(153))
_add("prose pw is", "my pw is " + _p(154), _p(154))
_add("prose password mixed case", "the wifi password Tr4mpolineHarbor works", "Tr4mpolineHarbor")
_add("passphrase label", "password: correct horse battery staple", "horse battery staple")
_add("passphrase quoted", 'the passphrase is "orbit lantern mosaic pickle"', "lantern mosaic pickle")
_add("passphrase single quoted", "my gpg passphrase was 'velvet tundra sprocket'", "tundra sprocket")
_add("passphrase strong first word", "the vpn password is Tr4mpoline cactus harbor", "cactus harbor")
_add("passphrase yaml", "  db_password: walnut glacier ferris", "glacier ferris")
_add("passphrase capitalised", "Password: Meadow Quartz Falcon Ember", "Quartz Falcon Ember")
_add("passphrase comment", "password: ochre lagoon trellis # from the vault", "lagoon trellis")
_add("passphrase clause", "wifi password: amber kettle drum, ask if it fails", "kettle drum")
_add("PASS spaced mid-line", "I set DB_PASS = " + _w(81) + " in prod", _w(81))
_add("PASSWORD spaced mid-line", "then API_TOKEN = " + _w(82) + ".", _w(82))

# -- markup and name/value pairs ------------------------------------------------------------
_add("xml password element", "<password>" + _w(73) + "</password>", _w(73))
_add("xml secret element", "  <secret>" + _p(74) + "</secret>", _p(74))
_add("xml apiKey element", '<apiKey type="prod">' + _w(75) + "</apiKey>", _w(75))
_add("xml password attribute", '<user name="bob" password="' + _w(76) + '"/>', _w(76))
_add("xml appSettings", '<add key="DbPassword" value="' + _w(77) + '"/>', _w(77))
_add("spring property", '<property name="password" value="' + _w(78) + '"/>', _w(78))
_add("k8s env yaml", "- name: DB_PASSWORD\n  value: " + _w(79), _w(79))
_add("k8s env json", '{"name": "API_TOKEN", "value": "' + _w(80) + '"}', _w(80))
# -- several words after '=', short names with all-letter values, "NAME is value" -----------
_add("passphrase spaced equals", "password = velcro summit pebble", "summit pebble")
_add("passphrase two words", "api_key = lumber cricket", "lumber cricket")
_add("passphrase glued equals", "password=tangerine fjord walrus", "fjord walrus")
_add("passphrase upper env", "PASSWORD=marble osprey thimble", "osprey thimble")
_add("passphrase DB_PASSWORD", "DB_PASSWORD=cobalt heron saddle", "heron saddle")
_add("passphrase fish set", "set -x DB_PASSWORD juniper anvil sonnet", "anvil sonnet")
_add("passphrase fish set in a code span", "run `set -x DB_PASSWORD tundish capybara yarrow`",
     "capybara yarrow")
_add("passphrase setenv in a code span", "run `setenv DB_PASS quill marten bramble`", "marten bramble")
_add("passphrase export in a code span", "run `export DB_PASSWORD=larch pewter mongoose`",
     "pewter mongoose")
_add("passphrase label digit", "password: Gr4nite cactus orchard", "cactus orchard")
_add("passphrase slash comment", "password = saffron dingo kettle // from the vault", "dingo kettle")
_add("password label after a field", "user: admin, password: kookaburra", "kookaburra")
_add("NAME is value", "the DB_PASS is " + _w(83), _w(83))
_add("NAME is value at start", "DB_PASS is " + _w(84), _w(84))
_add("pass lower letters", "db_pass=wombatine", "wombatine")
_add("pwd lower spaced letters", "db_pwd = platypusy", "platypusy")
_add("Pass camel letters", "smtpPass=echidnas", "echidnas")
_add("pw lower letters", "user_pw=bilbyfox", "bilbyfox")
_add("export pass lower letters", "export db_pass=quollish", "quollish")
# -- spaced '=' in the middle of a line, a colon with no space ------------------------------
_add("lower spaced mid-line", "we use client_secret = " + _w(85) + " for staging", _w(85))
_add("lower spaced after code", "x = 1; auth_token = " + _w(86), _w(86))
_add("lower spaced after label", "note: token = " + _p(87), _p(87))
_add("lower spaced symbol mid-line", "I set secret = " + _p(88) + "x in prod", _p(88))
_add("short lower spaced mid-line", "I set db_pass = " + _w(89) + " in prod", _w(89))
_add("upper spaced trailing ampersand", "I set TOKEN = okapiZ9& in prod", "okapiZ9&")
_add("colon no space", "password:bandicootish", "bandicootish")
_add("upper colon no space", "DB_PASSWORD:wallabyish", "wallabyish")
_add("connection string letters", "Server=db;Database=app;Password=walrusine;Encrypt=true", "walrusine")
# -- a secret word as the head noun, with a number or qualifier after it ----------------------
_add("qualified name", "DB_PASSWORD_PROD=" + _p(90), _p(90))
_add("numbered name", "GITHUB_TOKEN_2=" + _p(91), _p(91))
_add("rails secret key base", "SECRET_KEY_BASE=" + _p(92), _p(92))
# -- more markup and quotes ---------------------------------------------------------------
_add("xml element on its own lines", "<password>\n  " + _w(93) + "\n</password>", _w(93))
_add("xml cdata", "<password><![CDATA[" + _p(94) + "]]></password>", _p(94))
_add("xml value before key", '<add value="' + _w(95) + '" key="DbPassword"/>', _w(95))
_add("spring property element", '<property name="password">' + _w(96) + "</property>", _w(96))
_add("xml entry element", '<entry key="password">' + _w(97) + "</entry>", _w(97))
_add("k8s value before name", "- value: " + _w(98) + "\n  name: DB_PASSWORD", _w(98))
_add("k8s flow form", "- {name: DB_PASSWORD, value: " + _w(99) + "}", _w(99))
_add("passphrase typographic quotes", "the password is \u201cquasar nectar tulip\u201d", "nectar tulip")
_HRKU = "HRKU-" + chars(60, URLSAFE, start=47)
_add("heroku HRKU", "export HEROKU_API_KEY=" + _HRKU, _HRKU)
# -- Go and Makefile ':=', YAML tags ------------------------------------------------------------
_add("go short assignment", 'password := "' + _w(100) + '"', _w(100))
_add("upper colon equals", 'DB_PASSWORD := "' + _w(101) + '"', _w(101))
_add("colon equals no space", 'password:="' + _w(102) + '"', _w(102))
_add("yaml str tag", "  secret: !!str " + _w(103), _w(103))
# -- statements: subscript keys, lookup defaults, SQL, libpq, Docker, kubectl -------------------
_add("subscript key", "config['password'] = '" + _p(104) + "'", _p(104))
_add("environ subscript", 'os.environ["DB_PASSWORD"] = "' + _w(105) + '"', _w(105))
_add("getenv default", "password = os.getenv('DB_PASSWORD', '" + _w(106) + "')", _w(106))
_add("environ get default", "token = os.environ.get('TOKEN', '" + _w(107) + "')", _w(107))
_add("php env default", "'password' => env('DB_PASS', '" + _w(108) + "'),", _w(108))
_add("sql with password", "ALTER USER app WITH PASSWORD '" + _w(109) + "';", _w(109))
_add("sql identified by", "CREATE USER app IDENTIFIED BY '" + _w(110) + "';", _w(110))
_add("libpq keywords", 'psql "host=db user=app password=' + _w(111) + ' dbname=app"', _w(111))
_add("dockerfile env space form", "ENV DB_PASSWORD " + _w(112), _w(112))
_add("kubectl literal quoted",
     "kubectl create secret generic db --from-literal=DB_PASSWORD='walrus " + _w(113) + "'", _w(113))
_add("htpasswd -b", "htpasswd -b .htpasswd bob " + _w(114), _w(114))
_add("htpasswd -nb", "htpasswd -nb bob " + _w(115), _w(115))
_add("chpasswd", "echo 'bob:" + _w(116) + "' | chpasswd", _w(116))
_add("net user", "net user bob " + _p(117) + " /add", _p(117))
_add("bare lower pass letters", "pass=numbatish", "numbatish")
# -- calls that set a secret-named variable, and credential calls ------------------------------
_add("dotnet SetEnvironmentVariable",
     'Environment.SetEnvironmentVariable("DB_PASSWORD", "' + _w(122) + '");', _w(122))
_add("environ setdefault", "os.environ.setdefault('API_TOKEN', '" + _w(123) + "')", _w(123))
_add("os.putenv", 'os.putenv("DB_PASS", "' + _w(124) + '")', _w(124))
_add("go os.Setenv", 'os.Setenv("GITHUB_TOKEN", "' + _w(125) + '")', _w(125))
_add("rust set_var", 'std::env::set_var("API_KEY", "' + _w(126) + '");', _w(126))
_add("process.env assignment", 'process.env.API_TOKEN = "' + _w(127) + '";', _w(127))
_add("NetworkCredential", 'var cred = new NetworkCredential("sa", "' + _w(128) + '");', _w(128))
_add("NetworkCredential domain",
     'new NetworkCredential(userName, @"' + _p(129) + '", "CORP")', _p(129))
_add("HTTPDigestAuth", 'auth = HTTPDigestAuth("bob", "' + _w(130) + '")', _w(130))
# -- dotnet user-secrets, Java keytool and jarsigner ----------------------------------------------
_add("dotnet user-secrets set", 'dotnet user-secrets set "Db:Password" "' + _w(132) + '"', _w(132))
_add("dotnet user-secrets unquoted", "dotnet user-secrets set Stripe:ApiKey " + _p(133), _p(133))
_add("dotnet user-secrets project",
     'dotnet user-secrets --project src/Web set "Smtp:Pass" "' + _w(134) + '"', _w(134))
_add("keytool -storepass", "keytool -genkeypair -alias app -keystore app.jks -storepass " + _w(135)
     + " -keypass changeit", _w(135))
_add("keytool -keypass", "keytool -genkeypair -keystore app.jks -storepass changeit -keypass " + _w(136),
     _w(136))
_add("keytool -deststorepass", "keytool -importkeystore -srcstorepass changeit -deststorepass "
     + _p(137) + " -destkeystore new.p12", _p(137))
_add("jarsigner -storepass", "jarsigner -keystore app.jks -storepass " + _w(138) + " app.jar release",
     _w(138))
_add("keytool -new", "keytool -storepasswd -new " + _w(139) + " -keystore app.jks", _w(139))
# -- multiple assignment: the value at the secret name's place, not the first one -------------
_add("go multiple assignment", 'user, password := "bob", "' + _w(140) + '"', _w(140))
_add("python multiple assignment", 'user, password = "bob", "' + _w(141) + '"', _w(141))
_add("multiple assignment secret first", 'token, url := "' + _w(142) + '", "https://api.example.com"',
     _w(142))
_add("multiple assignment of four", 'host, port, user, pwd = "db", 5432, "bob", "' + _p(143) + '"',
     _p(143))
# Two secret targets of one list: each value goes, on the next pass the second.
_add("multiple assignment, second secret target",
     'api_token, client_secret = "' + _w(180) + '", "' + _w(181) + '"', _w(180))
_add("multiple assignment, both secret targets",
     'api_token, client_secret = "' + _w(182) + '", "' + _w(183) + '"', _w(183))
# A literal behind a bytes prefix or a conversion keeps being a literal.
_add("python bytes literal", 'SECRET_KEY = b"' + _w(184) + '"', _w(184))
_add("python bytes literal, single quotes", "signing_secret = b'" + _p(185) + "'", _p(185))
_add("multiple assignment, a last_pwd", 'user, last_pwd = "bob", "' + _w(201) + '"', _w(201))
_add("a bracketed capital password", 'password = "[' + _w(202).upper() + ']"', _w(202).upper())
_add("go []byte literal", 'jwtSecret := []byte("' + _w(186) + '")', _w(186))
_add("node Buffer.from literal", 'const apiKey = Buffer.from("' + _w(187) + '", "base64");', _w(187))
_add("multiple assignment of four secret targets",
     'a_token, b_token, c_token, d_token = "' + _w(189) + '", "x1y2z3w", "q9r8s7t", "m5n4o3p"', _w(189))
_add("multiple assignment, wrapped secret value", 'user, password := "bob", []byte("' + _w(190) + '")',
     _w(190))
_add("multiple assignment, bytes value", 'user, password = "bob", b"' + _w(191) + '"', _w(191))
_add("multiple assignment after a bytes value",
     'api_token, client_secret = b"' + _w(192) + '", "' + _w(193) + '"', _w(193))
_add("multiple assignment after an ordinal pass", 'first_pass, token = "quick", "' + _w(198) + '"', _w(198))
_add("multiple assignment of attributes", 'self.user, self.password = "bob", "' + _w(199) + '"', _w(199))
_add("multiple assignment of attributes, secret first",
     'self.token, self.url = "' + _w(200) + '", "https://api.example.com"', _w(200))
_add("env bytes literal", 'SECRET_KEY=b"' + _w(194) + '"', _w(194))
_add("env []byte literal", 'API_TOKEN=[]byte("' + _w(195) + '")', _w(195))
_add("flask config keyword bytes", "app.config.update(SECRET_KEY=b'" + _w(196) + "')", _w(196))
_add("shell check then a literal", "DB_PASSWORD=${DB_PASSWORD?}" + _w(197), _w(197))
_add("shell default of a secret variable", 'export DB_PASSWORD="${DB_PASSWORD:-' + _w(188) + '}"',
     _w(188))
_add("elasticsearch basic_auth",
     'es = Elasticsearch(url, basic_auth=("elastic", "' + _w(131) + '"))', _w(131))



# -- found on disk by an adversarial run through every write path -----------------------------
_BIP39_FILE = Path(__file__).resolve().parents[1] / "core/memory/redaction/data/bip39_english.txt"
_BIP39 = _BIP39_FILE.read_text().split()


def _seed(n: int, words: int = 12) -> str:
    """A recovery phrase of ``words`` BIP-39 words, distinct per ``n``."""
    rng = random.Random(f"seed-{n}")
    return " ".join(rng.choice(_BIP39) for _ in range(words))


_add("xml password element", "<password>" + _p(300) + "</password>", _p(300))
_add("xml add key value", '<add key="StripeApiSecret" value="' + _w(301) + '"/>', _w(301))
_add("passphrase in prose", "The passphrase for id_ed25519 is " + _p(302), _p(302))
_add("ssh with quoted password", "ssh into deploy@10.0.0.5 with password '" + _w(303).capitalize() + "7Z'",
     _w(303).capitalize() + "7Z")
_add("set-cookie", "Set-Cookie: connect.sid=s%3A" + chars(32, URLSAFE, start=304) + "; Path=/; HttpOnly",
     chars(32, URLSAFE, start=304))
_add("cookie header", "Cookie: theme=dark; session=" + chars(40, HEX, start=305), chars(40, HEX, start=305))
_add("curl -b", "curl -b 'session=" + chars(32, HEX, start=306) + "' https://app.example.com/api",
     chars(32, HEX, start=306))
_add("curl --cookie", 'curl --cookie "sid=' + chars(28, ALNUM, start=307) + '" https://app.example.com',
     chars(28, ALNUM, start=307))
_SID = [chars(24, ALNUM, start=314 + i) for i in range(3)]
_add("set-cookie quoted", 'Set-Cookie: sid="' + _SID[0] + '"; Path=/', _SID[0])
_add("curl -sb", "curl -sb 'sid=" + _SID[1] + "' https://app.example.com", _SID[1])
_add("curl -b glued", "curl -b'sid=" + _SID[2] + "' https://app.example.com", _SID[2])
_add("seed phrase 12", "wallet seed: " + _seed(308), _seed(308))
_SEED_LINES = _seed(309, 24).replace(" ", "\n", 11)
_SEED_NUMBERED = "\n".join(f"{n}. {word}" for n, word in enumerate(_seed(317).split(), start=1))
_add("seed phrase 24 on lines", "recovery words:\n" + _SEED_LINES, _SEED_LINES)
_add("seed phrase numbered", "Your recovery phrase:\n" + _SEED_NUMBERED, _SEED_NUMBERED.split("\n", 1)[1])
_add("seed phrase capitalised", "Backup: " + _seed(318).capitalize(), _seed(318)[1:])
_add("seed phrase as a json list", json.dumps(_seed(319).split()), _seed(319).split()[5])
_add("pgpass after text", "notes from today: db.internal:5432:app:backup:" + _p(310), _p(310))
_DE, _FR = _w(311).capitalize() + "!", _w(312).capitalize() + "!7"
_add("german prose password", "Das Passwort für den Server ist " + _DE, _DE)
_add("french prose password", "Le mot de passe du serveur est " + _FR, _FR)
_add("german compound password", "Das WLAN-Passwort ist " + _p(320), _p(320))
_add("swedish definite password", "lösenordet är " + _p(321), _p(321))
_add("german other verb", "Das Kennwort heißt " + _p(322), _p(322))
_add("italian password", "la password del server è " + _p(323), _p(323))
_add("spanish prose password", "La contraseña de la base es " + _p(313), _p(313))
_PEM4 = "\n".join(chars(64, BASE64, start=320 + i) for i in range(4))
_CUT_BODY = "\n".join(chars(70, BASE64, start=330 + i) for i in range(3))
_add("pem body without begin",
     "...the rest of the key:\n" + _CUT_BODY + "\n" + DASHES + "END OPENSSH PRIVATE KEY" + DASHES, _CUT_BODY)
_add("pem with four dashes",
     "----BEGIN RSA PRIVATE KEY----\n" + _PEM4 + "\n----END RSA PRIVATE KEY----", _PEM4)
_TAIL = [chars(64, BASE64, start=340 + i) for i in range(12)]
_END_LINE = DASHES + "END PRIVATE KEY" + DASHES
_add("pem tail after a label", "key tail: " + _TAIL[0] + "\n" + _TAIL[1] + "\n" + _END_LINE, _TAIL[1])
_add("pem tail quoted", "> " + _TAIL[2] + "\n> " + _TAIL[3] + "\n> " + _END_LINE, _TAIL[3])
_add("pem tail commented", "# " + _TAIL[4] + "\n# " + _TAIL[5] + "\n# " + _END_LINE, _TAIL[4])
_add("pem tail blank line before end", _TAIL[6] + "\n" + _TAIL[7] + "\n\n" + _END_LINE, _TAIL[7])
_add("pem tail after a prose line", "here is the tail\n" + _TAIL[11] + "\n" + _END_LINE, _TAIL[11])
_add("pem tail short last line", _TAIL[8] + "\n" + _TAIL[9][:10] + "==\n" + _END_LINE, _TAIL[8])
_add("pem with three dashes",
     "---BEGIN RSA PRIVATE KEY---\n" + _TAIL[10][:60] + "\n---END RSA PRIVATE KEY---", _TAIL[10][:60])
_JAR = chars(22, ALNUM, start=350)
_add("cookie quoted", 'Cookie: sid="' + chars(22, ALNUM, start=351) + '"', chars(22, ALNUM, start=351))
_add("set-cookie json list", '{"set-cookie": ["sid=' + chars(22, ALNUM, start=352) + '; Path=/"]}',
     chars(22, ALNUM, start=352))
_add("netscape cookie jar", ".example.com\tTRUE\t/\tTRUE\t0\tsessionid\t" + _JAR, _JAR)


# -- vendor formats our rules do not name: the maintained rule set's (vendor.py) --------------
# In contexts with no secret word, where only a rule for the format itself can match.
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_VENDOR_CONTEXTS = ("works now with {} on staging", "I pasted {} into the CI settings page",
                    "- `{}`", "ran the nightly job with {} and it passed")
for _i, (fmt, token) in enumerate([
    ("pulumi", "pul-" + chars(40, HEX, start=400)),
    ("terraform cloud", chars(14, start=401) + ".atlasv1." + chars(67, start=402)),
    ("figma", "figd_" + chars(40, URLSAFE, start=404)),
    ("dynatrace", "dt0c01." + chars(24, UPPER_DIGITS, start=405) + "." + chars(64, UPPER_DIGITS, start=406)),
    ("planetscale password", "pscale_pw_" + chars(43, URLSAFE, start=408)),
    ("shippo", "shippo_live_" + chars(40, HEX, start=409)),
    ("easypost", "EZAK" + chars(54, start=410)),
    ("duffel", "duffel_live_" + chars(43, URLSAFE, start=411)),
    ("frame.io", "fio-u-" + chars(64, URLSAFE, start=412)),
    ("brevo", "xkeysib-" + chars(64, HEX, start=413) + "-" + chars(16, start=414)),
    ("adobe client secret", "p8e-" + chars(32, start=415)),
    ("prefect", "pnu_" + chars(36, start=417)),
    ("readme", "rdme_" + chars(70, _LOWER_DIGITS, start=418)),
    ("scalingo", "tk-us-" + chars(48, URLSAFE, start=419)),
    ("clojars", "CLOJARS_" + chars(60, _LOWER_DIGITS, start=420)),
    ("infracost", "ico-" + chars(32, start=424)),
    ("flutterwave", "FLWSECK_TEST-" + chars(32, HEX, start=425) + "-X"),
    ("sourcegraph", "sgp_" + chars(40, HEX, start=426)),
    ("intra42", "s-s4t2ud-" + chars(64, HEX, start=427)),
    ("maxmind", chars(6, start=428) + "_" + chars(29, start=429) + "_mmk"),
    ("facebook page token", "EAAM" + chars(120, start=430)),
    ("1password secret key",
     "A3-" + "-".join(chars(n, UPPER_DIGITS, start=441 + i) for i, n in enumerate((6, 11, 5, 5, 5)))),
    ("airtable pat", "pat" + chars(14, start=432) + "." + chars(64, HEX, start=433)),
    ("openshift", "sha256~" + chars(43, URLSAFE, start=435)),
    ("rubygems", "rubygems_" + chars(48, HEX, start=436)),
    ("deno deploy", "ddp_" + chars(36, start=437)),
    ("gitlab feed token", "glft-" + chars(20, URLSAFE, start=438)),
    ("square eaaa", "EAAA" + chars(60, URLSAFE, start=440)),
]):
    _add("vendor " + fmt, _VENDOR_CONTEXTS[_i % len(_VENDOR_CONTEXTS)].format(token), token)


# Lines that must come out exactly as they went in.
BENIGN: list[str] = [
    "integrity: sha512-" + chars(86, BASE64, start=360) + "==",
    "> the block ends with a line like -----END PRIVATE KEY----- and nothing after it",
    "---\n# END OF THE FIRST DOCUMENT\n---\nkind: Service",
    "Cookie: none sent (the request had no cookies)",
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
    "PWD = /home/alice/project",
    "set -x PWD /srv/app",
    "set -gx PATH $HOME/.local/bin $PATH",
    "set token expiry to one hour",
    "BYPASS=quokka",
    "COMPASS=north",
    "LOWPASS=lowshelf",
    "TWOPASS=enabled",
    "pwd = cwd",
    "KEEPASS_DB=/home/alice/vault.kdbx",
    "the password reset flow is broken",
    "set -x GITHUB_TOKEN (gh auth token)",
    "The -keypass option defaults to the -storepass value.",
    "-storepass and -keypass must match for PKCS12.",
    "Both -storepass and -keypass accept :env and :file suffixes.",
    "-storepass arg      keystore password",
    "keytool -genkeypair -alias app -storepass STOREPASS -keypass KEYPASS",
    "Give --password once; --password twice is an error.",
    "password hashing moved to argon2id in v2",
    "the password reset v2 flow ships on Friday",
    "PW is flaky on CI since 1.40.0",
    "password $DB_PASSWORD from the env",
    "We rotated the password. Version2Beta is out",
    "the password field accepts 64 characters",
    "then set API_TOKEN in the CI settings page",
    "the setenv DB_PASS line goes in .cshrc",
    "the options (set -x API_TOKEN before running) matter",
    "| setenv DB_PASSWORD prompt | asks for it |",
    "set -x GOOGLE_APPLICATION_CREDENTIALS ~/key.json",
    "setenv SSL_KEY_PASSWORD $HOME/.pgpass",
    "`set -x TOKEN value`",
    "`setenv SECRET value`",
    "Run: set API_TOKEN in CI",
    "Note: set -x API_TOKEN before running",
    "1. set API_TOKEN in CI",
    "- setenv DB_PASS when needed",
    "Tip: setenv DB_PASSWORD first",
    "2) setenv SECRET_KEY from the vault",
    "password: see the vault",
    "password: ask the on-call engineer",
    "password: in 1Password, under Staging DB",
    "password: The password to log in with.",
    "db_password: the database password, or None to prompt.",
    "the password is reset daily",
    "the passphrase is not set",
    "<password>${env.MAVEN_PASSWORD}</password>",
    "<tokenUrl>https://auth.example.com/token</tokenUrl>",
    "<bypass>local</bypass>",
    '<add key="TokenTimeout" value="30s"/>',
    '<property name="username" value="bob"/>',
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db",
    "token = await client_token",
    "password = None if missing else value",
    "password = old_password or default_password",
    "OPENAI_API_KEY=sk-... python app.py",
    "password: ${DB_PASSWORD}",
    "token = tokens[0]",
    "self.token = self.token_v2.refresh()",
    "if ok: password = hashlib.sha256(raw).hexdigest()",
    "x = a; token = build_token(cfg)",
    "password:str",
    "token::Type",
    "pin: numpy==1.26",
    "<password>see the vault</password>",
    "<secret>stored in 1Password</secret>",
    "token_usage=in12out3",
    "password_policy=strict1!",
    "api_key_env=OPENAI_API_KEY2",
    "PasswordPolicy = Strong1!",
    "passwordEncoder = bcrypt12 for hashing",
    "tokenStore=redis://cache:6379/0",
    "passwordHash: pbkdf2$abc",
    "<passwordPolicy>min12chars</passwordPolicy>",
    '<add key="TokenStore" value="redis2"/>',
    '<property name="username">bob</property>',
    '<add value="30s" key="TokenTimeout"/>',
    "- value: info\n  name: LOG_LEVEL",
    "- {name: LOG_LEVEL, value: info}",
    "X-Token-Usage: in12-out3",
    "def login(username: str, password: str) -> Token:",
    "def __init__(self, password: str) -> None:",
    "async def login(self, password: str):",
    "fn check(password: &str) -> bool {",
    "token=token)",
    "api_key=api_key)",
    "secret=secret)",
    "password=password))",
    "token: ~",
    "password: ~",
    "api_key: ~",
    "password: !ENV ${DB_PASSWORD}",
    "password: '%(db_password)s'",
    'password := r.FormValue("password")',
    "if config['password'] == user_input:",
    "password = os.getenv('DB_PASSWORD')",
    "SELECT password FROM users WHERE id = 1;",
    "psql \"host=db user=app dbname=app\"",
    "ENV TOKEN_TTL 3600",
    "htpasswd -c .htpasswd bob",
    "net user bob /delete",
    "net user bob *",
    "net user accounts are listed here",
    "pass=1",
    "pass=true",
    "first_pass=quokka",
    "DB_PASS=;",
    'user, password := "bob", password',
    'user, password := os.Getenv("DB_USER"), os.Getenv("DB_PASSWORD")',
    "for _, token := range tokens {",
    "dotnet user-secrets list",
    "dotnet user-secrets init --project src/Web",
    'dotnet user-secrets remove "Db:Password"',
    'dotnet user-secrets set "Logging:LogLevel" "Debug"',
    "keytool -list -v -keystore app.jks",
    "keytool -list -keystore app.jks -storepass:env KEYSTORE_PASS",
    "jarsigner -verify -verbose app.jar",
    "pass the -storepass and -keypass flags to keytool",
    'os.environ["DB_PASSWORD"]',
    'password = os.environ["DB_PASSWORD"]',
    'Environment.GetEnvironmentVariable("DB_PASSWORD")',
    'Environment.SetEnvironmentVariable("DB_PASSWORD", password);',
    'Environment.SetEnvironmentVariable("DB_PASSWORD", null);',
    'os.Setenv("API_TOKEN", token)',
    'os.environ.setdefault("API_TOKEN", "")',
    "new NetworkCredential(user, password)",
    'new NetworkCredential("sa", password, "CORP")',
    'new NetworkCredential("sa", GetPassword())',
    "requests.get(url, auth=(user, password))",
    "PASSWORD=; export PASSWORD",
    'token = f"Bearer {access}"',
    'signingKey := []byte(os.Getenv("JWT_SECRET"))',
    "token := []byte(secret)",
    'password = b""',
    'export API_KEY="${API_KEY:-}"',
    "API_KEY=${API_KEY-$FALLBACK_KEY}",
    "TOKEN=${TOKEN:?set TOKEN first}",
    'export TOKEN="${TOKEN:?set TOKEN first}"',
    'token = r"[A-Za-z_]\\w*"',
    "t_TOKEN = r'[a-z]+'",
    'pattern, token = rb"\\d+", rb"[a-z]+"',
    'first_pass, second_pass = "quick", "full"',
    'pad_token, unk_token = "[PAD]", "[UNK]"',
    "self.token, self.count = tok, 0",
    # real code, config and chat that look near the new rules
    "Set-Cookie headers are stripped by the proxy",
    "the Cookie header is sent on every request",
    "curl -b cookies.txt -c cookies.txt https://example.com",
    "curl -b ~/.cookies https://app.example.com/login",
    "response.set_cookie('theme', value, httponly=True)",
    "cookie_jar = requests.cookies.RequestsCookieJar()",
    "document.cookie.split('; ')",
    "Set the SameSite attribute on the cookie to Lax.",
    "the seed for the random generator is 42",
    "rng = np.random.default_rng(seed=1234)",
    "torch.manual_seed(0); random.seed(0)",
    "we should add a retry and a backoff to the fetch loop",
    "please review the pull request and leave a comment about the style",
    "I think the build is broken because the cache key changed again",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "sort the list, then remove duplicates, then write the file",
    "abandon the branch and start again from main",
    "Das Passwort muss mindestens 12 Zeichen lang sein.",
    "Le mot de passe est stocké dans le coffre-fort.",
    "La contraseña es obligatoria.",
    "Passwort: siehe Vault",
    "mot de passe : voir le gestionnaire",
    "ssh into deploy@10.0.0.5 with your key, not a password",
    "log in with password authentication disabled",
    "the password 'field' is required",
    "12:30:45:123:456 frame dropped",
    "fe80:0:0:0:202:b3ff:fe1e:8329",
    "2001:db8:85a3:0:0:8a2e:370:7334",
    "at 2024-05-01 10:22:33: job 42 finished",
    "localhost:5432:*:postgres:*",
    "ports: 8080:80, 8443:443",
    "image: registry.example.com:5000/app:1.4.2",
    "-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----",
    "base64 -d <<< SGVsbG8sIHdvcmxkIQ==",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "sha256sum: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "uuid = 123e4567-e89b-12d3-a456-426614174000",
    "with open(path) as f: data = json.load(f)",
    "for i in range(0, len(items), batch_size):",
    "const session = await getSession({ req });",
    "export default function Login({ onSubmit }) {",
    "if (!user.passwordHash) throw new Error('no hash');",
    "hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    "ALTER ROLE app WITH LOGIN;",
    "CREATE USER app;",
    "[mysql]\nuser = backup\nhost = db.internal",
    '{"stdout": "build ok\\ntests: 214 passed"}',
    '{"level": "info", "msg": "password reset email sent", "user": 42}',
    "environment:\n  - LOG_LEVEL=debug\n  - PORT=8080",
    "resource \"aws_s3_bucket\" \"logs\" { bucket = \"app-logs\" }",
    "token_budget: 4096",
    "max_tokens=1024, temperature=0.2",
    "The tokenizer splits on whitespace and punctuation.",
    "git push --set-upstream origin feature/login-form",
    "docker run -p 5432:5432 -e POSTGRES_DB=app postgres:16",
    "kubectl get secret db-credentials -o yaml",
    "npm run build && npm test",
    "Thanks! That fixed the flaky test on CI.",
    "Can you check why the deploy failed on staging?",
    "We agreed to rotate keys every 90 days.",
    "The wallet app shows a 12-word recovery phrase on setup; write it on paper.",
    "ability to abandon able users about above",
    # sentences made of recovery-phrase words, and keys shaped like a .pgpass line
    "You can always use this tool when you want more control over any other project.",
    "Once you enter your email address you must wait about one hour before you can try again.",
    "Maybe you should just open another issue about that because this one will never close.",
    "I think you can also just make another copy when you need one more test case.",
    "redis-cli GET app:42:user:profile:v2_cache",
    "DEL sess:1:user:42:abc123def",
    "values.yaml:3:1:tag:v1.2.3-rc1",
    'main.go:33:2:log:Printf("%d", n)',
    "urn:1:isbn:978:0451450",
    "task:7:queue:default:retry=3",
    "Das Passwort steht in der Datei: ~/Secrets/Prod2.env",
    "Passwort zurücksetzen: /api/v1/resetPassword",
    "mot de passe oublié : /auth/v2/forgotPassword",
    "git checkout -b feature/login-form",
    "La password è obbligatoria.",
    "Das Passwort muss mindestens 12 Zeichen lang sein.",
    "Das Datenbankpasswort wird beim Start aus dem Vault gelesen.",
    "tar -xzb 20 -f backup.tar",
]


def _check_unique() -> None:
    for fmt, _, secret in SECRETS:
        others = [line for f, line, _ in SECRETS if f != fmt] + BENIGN
        assert not any(secret in line for line in others), (fmt, [x[:40] for x in others if secret in x])


_check_unique()
