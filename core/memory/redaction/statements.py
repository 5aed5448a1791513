"""Rules for secrets written as a statement rather than an assignment: the default of an
environment lookup or the value a call sets a variable to, the password argument of a
credential call, SQL's ``PASSWORD 'x'`` and ``IDENTIFIED BY 'x'``, the password of a
libpq key=value connection string, and Docker's legacy ``ENV NAME value``."""

from __future__ import annotations

from bli_memory.core.memory.redaction.patterns import (
    _BARE,
    _EOL,
    _QUOTED_SECRET_NAME,
    _SECRET_HEAD,
    _rule,
)

__all__ = []

# libpq's connection keywords ("Connection Strings", PostgreSQL docs, 34.1.1), each
# checked to start a word after its first letter, so the scan skips to candidates.
_LIBPQ_KEYWORD = (
    r"(?:h(?<![\w.-]h)ost(?:addr)?|p(?<![\w.-]p)ort|d(?<![\w.-]d)bname|u(?<![\w.-]u)ser"
    r"|s(?<![\w.-]s)slmode|c(?<![\w.-]c)onnect_timeout|a(?<![\w.-]a)pplication_name)"
)

_STATEMENT_RULES = (
    # The literal default of an environment lookup: os.getenv('DB_PASSWORD', 'walrus99'),
    # os.environ.get('TOKEN', '...'), Laravel's env('DB_PASS', '...'), Ruby's
    # ENV.fetch('TOKEN', '...'); and the value a call sets a variable to: Python's
    # os.environ.setdefault and os.putenv, Go's os.Setenv, Rust's env::set_var, .NET's
    # Environment.SetEnvironmentVariable.
    _rule(
        "env_secret",
        r"(?:g(?<![\w$]g)etenv|e(?<![\w$]e)(?:nviron\.(?:get|setdefault)|nv)|E(?<![\w$]E)NV\.fetch"
        r"|p(?<![\w$]p)utenv|S(?<![\w$]S)et(?:env|EnvironmentVariable)|s(?<![\w$]s)et_var)\([ \t]*"
        rf"(?P<kq>[\"']){_QUOTED_SECRET_NAME}(?P=kq)[ \t]*,[ \t]*"
        r"(?P<vq>[\"'])(?P<value>[^\"'\r\n]+)(?P=vq)",
        "value",
    ),
    # The password of a call whose second argument is one, by the API's definition:
    # requests' and httpx's auth=("user", "VALUE") (Elasticsearch's basic_auth= and
    # http_auth= too), HTTPBasicAuth and HTTPDigestAuth("user", "VALUE"),
    # aiohttp's BasicAuth("user", "VALUE"), .NET's NetworkCredential("user", "VALUE"[,
    # "domain"]). The user may be a variable or a C# verbatim string; a password that is
    # a variable or a call is code and stays.
    _rule(
        "basic_auth",
        r"(?:a(?<![A-Za-z0-9$]a)uth[ \t]*=[ \t]*\(|(?:HTTP(?:Basic|Digest)|B(?<![\w$]B)asic)Auth\("
        r"|N(?<![\w$]N)etworkCredential\()[ \t]*"
        r"(?:@?[\"'][^\"'\r\n]*[\"']|[A-Za-z_$][\w$.]*)[ \t]*,[ \t]*@?[\"']"
        r"(?P<value>[^\"'\r\n]+)[\"']",
        "value",
    ),
    # SQL: ALTER USER app WITH PASSWORD 'x', CREATE ROLE app LOGIN PASSWORD 'x',
    # CREATE USER app IDENTIFIED BY 'x' (PostgreSQL, MySQL, Oracle).
    _rule(
        "sql_password",
        r"(?:P(?<![\w-]P)ASSWORD|[Ii](?<![\w-].)(?i:dentified[ \t]+by))[ \t]+"
        r"(?P<q>['\"])(?P<value>[^'\"\r\n]+)(?P=q)",
        "value",
    ),
    # libpq key=value strings: "host=db user=app password=walrus dbname=app", the
    # password after another connection keyword or before one.
    _rule(
        "dsn_password",
        rf"{_LIBPQ_KEYWORD}=[^\s\"'`=]+(?:[ \t]+[a-z_]+=[^\s\"'`=]+){{0,8}}?"
        r"[ \t]+password=(?P<value>[^\s\"'`]+)",
        "value",
    ),
    _rule(
        "dsn_password",
        rf"p(?<![\w.-]p)assword=(?P<value>[^\s\"'`]+)(?=[ \t]+{_LIBPQ_KEYWORD}=)",
        "value",
    ),
    # Docker's legacy form, ENV NAME value: the rest of the line is the value.
    _rule(
        "env_secret",
        rf"(?m:^)[ \t]*ENV[ \t]+(?=[A-Z0-9_]*?{_SECRET_HEAD}[ \t])[A-Z_][A-Z0-9_]*[ \t]+(?![=\"'])"
        rf"(?P<value>{_BARE}){_EOL}",
        "value",
    ),
)
