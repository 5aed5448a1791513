"""Rules for HTTP credentials: Authorization headers, ``curl -u``, a free-standing
``Bearer`` token, cookies, URL passwords and secret-named query parameters."""

from __future__ import annotations

from bli_memory.core.memory.redaction.patterns import _TOKEN_CHAR, _TOKEN_LIKE, _name, _rule

__all__ = []

_AUTHORIZATION = r"[Aa](?i:uthorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
_HTTP_AUTH_RULES = (
    # In an Authorization header any credential counts, however short.
    _rule(
        "bearer_token",
        rf"{_AUTHORIZATION}(?i:bearer)[ \t]+(?P<token>{_TOKEN_CHAR}+=*)",
        "token",
    ),
    _rule(
        "basic_auth",
        rf"{_AUTHORIZATION}(?i:basic)[ \t]+(?P<token>[A-Za-z0-9+/]+={{0,2}})",
        "token",
    ),
    _rule(
        "auth_header",
        rf"{_AUTHORIZATION}(?!(?i:bearer|basic)[ \t])"
        r"(?:(?i:token|bot|apikey|key|sso-key|ssws|splunk)[ \t]+)?"
        rf"(?P<token>{_TOKEN_LIKE})",
        "token",
    ),
    # curl -u user:password, the password quoted with the user or on its own (then it may
    # hold spaces: "deploy:correct horse battery", deploy:'hunter2 hunter2').
    _rule(
        "basic_auth",
        # The user part can't be a URL scheme: ``curl -u http://app`` has no password.
        r"-(?<!\S-)(?:u|-user)[ \t]+(?P<q>[\"'])?[^\s:\"']+:(?!//)"
        r"(?P<password>(?(q)[^\"'\r\n]+|(?:'[^'\r\n]+'|\"[^\"\r\n]+\"|[^\s\"']+)))",
        "password",
    ),
    # Elsewhere "Bearer" must be followed by something token-like, so that
    # "Bearer tokens are..." stays.
    _rule(
        "bearer_token",
        rf"[Bb](?<![\w-].)(?i:earer)[ \t]+(?P<token>{_TOKEN_LIKE})",
        "token",
    ),
)

# A cookie is a session, as good as a password while it lives (RFC 6265).
_COOKIE_RULES = (
    # Set-Cookie: the first pair is the cookie; what follows it are attributes
    # (Path, Expires, HttpOnly), which stay. Also as a JSON list's first item.
    _rule(
        "cookie",
        r"(?<![\w-])(?i:set-cookie)[\"']?[ \t]*:[ \t]*\[?[ \t]*[\"']?[^\s=;\"']+[ \t]*=[ \t]*\"?"
        r"(?P<value>[^\s;,\"']+)",
        "value",
    ),
    # Cookie: every pair of the header, names and all, to the end of the line or quote
    # (a quoted value's opening quote too: Cookie: sid="...").
    _rule(
        "cookie",
        r"(?<![\w-])(?i:cookie)[\"']?[ \t]*:[ \t]*(?P<value>[^\s=;\"']+=\"?[^\r\n\"']*[^\s\"'])",
        "value",
    ),
    # A cookie jar in Netscape's format (curl -c, wget --save-cookies): domain, flag, path,
    # secure, expiry, name, value, tab-separated; the value goes.
    _rule(
        "cookie",
        r"(?m)^[^\t\r\n]+\t(?:TRUE|FALSE)\t[^\t\r\n]*\t(?:TRUE|FALSE)\t[0-9]+\t[^\t\r\n]+\t"
        r"(?P<value>[^\t\r\n]+)",
        "value",
    ),
    # curl -b 'session=...' / -sb / -b'...' / --cookie "a=1; b=2": a pair is a cookie; a
    # bare word is a cookie file (curl -b cookies.txt) and stays.
    _rule(
        "cookie",
        r"(?<!\S)(?:-[A-Za-z]*b[ \t]*|--cookie(?:[ \t]+|=))(?P<q>[\"'])?"
        r"(?P<value>(?(q)[^\"'\r\n=]+=[^\"'\r\n]+|[^\s\"'=]+=[^\s\"']+))",
        "value",
    ),
)

_URL_RULES = (
    _rule(
        "url_password",
        # The password may hold '@' or ':'; greedy matching ends it at the
        # last '@' before the host. Excluding '/' keeps each scan to one URL.
        r"://[^\s:/?#@\"'<>\[\]]*:(?P<password>[^\s/?#\"'<>]+)@",
        "password",
    ),
    _rule(
        "query_secret",
        r"[?&](?:"
        + _name(first=r"\w\[\].-", chars=r"\w\[\].-", not_after=None)
        + r"|(?i:key|sig|signature|auth|pass|pwd|x-amz-signature"
        r"|x-amz-credential))=(?P<value>[^&\s#\"'<>]+)",
        "value",
    ),
)
