"""Rules for credentials recognised by their own shape: PEM private keys,
provider tokens with a documented prefix and length, and JSON Web Tokens."""

from __future__ import annotations

from bli_memory.core.memory.redaction.patterns import _END, _rule, _token

__all__ = []

# ---------------------------------------------------------------------------
# The rule table
# ---------------------------------------------------------------------------

_PEM_LABEL = r"(?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?"
# What may open each line of a quoted block: indentation, a mail or Markdown quote, a comment.
_QUOTE = r"[ \t]*(?:(?:>|#|//)[ \t]*)*"
_PRIVATE_KEY_RULES = (
    _rule(
        "private_key",
        # Three to six dashes count too: a block copied by hand loses or gains some.
        rf"-{{3,6}}BEGIN {_PEM_LABEL}-{{3,6}}"
        # A whole block. The body can't hold "----", so it stops at the END
        # line, or at the next armour line when END is missing.
        rf"(?:[^-]*(?:-(?!--)[^-]*)*-{{3,6}}END {_PEM_LABEL}-{{3,6}}"
        # A truncated block: header lines and base64 lines, each a whole line.
        r"|(?:[ \t]*\r?\n[ \t]*"
        r"(?:[A-Za-z][A-Za-z0-9-]*:[^\r\n]*|[A-Za-z0-9+/=]*)"
        r"[ \t]*(?![^\r\n]))*)",
    ),
    # The tail of a block whose BEGIN line was cut off: the base64 lines right above an
    # END line, quoted or not ("> ", "# ", "// "), the first one perhaps after a label
    # ("key tail: ..."), the last one short, a blank line before END. A run is taken only
    # from its first line (the lookbehinds: a line start right after a line that ends in
    # 16 base64 characters is not one; mid-line, only right after a label's colon and one
    # space), so a long base64 text with no END line is read once, not once per line.
    _rule(
        "private_key",
        r"(?m)(?:(?<![A-Za-z0-9+/=]{16}\n)(?<![A-Za-z0-9+/=]{16}\r\n)^" + _QUOTE
        + r"|(?<=[A-Za-z]:[ \t])(?=[A-Za-z0-9+/=]{40}))"
        r"(?:[A-Za-z0-9+/=]{16,}[ \t]*\r?\n" + _QUOTE + r")*"
        r"[A-Za-z0-9+/=]{4,}[ \t]*\r?\n" + _QUOTE + r"(?:\r?\n" + _QUOTE + r")?"
        rf"-{{3,6}}END {_PEM_LABEL}-{{3,6}}",
    ),
)

_PROVIDER_RULES = (
    _token("anthropic_api_key", "s", r"k-ant-[A-Za-z0-9_-]{20,}"),
    _token("openrouter_api_key", "s", r"k-or-v1-[A-Za-z0-9]{32,}"),
    _token(
        "openai_api_key",
        "s",
        r"k-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20,})",
    ),
    # Heroku's newer API keys (``heroku authorizations:create``): HRKU- then the key.
    _token("heroku_api_key", "H", r"RKU-[A-Za-z0-9_-]{20,}"),
    _token("github_token", "g", r"(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_\w{22,})"),
    _token(
        "gitlab_token",
        "g",
        r"l(?:pat|dt|rt|ptt|ft|imt|soat|cbt|agent|oas|ffct)-"
        r"[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*",
    ),
    _token(
        "slack_token",
        "x",
        r"(?:oxe\.xox[abeoprs]|ox[abeoprs]|app)-[A-Za-z0-9-]{10,}",
    ),
    _rule(
        "slack_webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"(?P<path>[A-Za-z0-9_/-]{10,})",
        "path",
    ),
    _rule(
        "discord_webhook",
        r"discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<token>[A-Za-z0-9_-]{20,})",
        "token",
    ),
    _token(
        "aws_access_key_id",
        "A",
        r"(?:3T[A-Z0-9]|KIA|SIA|BIA|CCA)[A-Z0-9]{16}" + _END,
    ),
    _token("google_api_key", "A", r"Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    _token("google_oauth_client_secret", "G", r"OCSPX-[A-Za-z0-9_-]{24,}"),
    _token("google_oauth_token", "y", r"a29\.[A-Za-z0-9_-]{20,}"),
    _token("google_oauth_token", "1", r"(?<![/.]1)//0[A-Za-z0-9_-]{30,}"),
    _token("stripe_key", "[spr]", r"k_(?:live|test)_[A-Za-z0-9]{16,}"),
    _token("stripe_key", "w", r"hsec_[A-Za-z0-9]{24,}"),
    _token("npm_token", "n", r"pm_[A-Za-z0-9]{36}" + _END),
    _token("pypi_token", "p", r"ypi-Ag[A-Za-z0-9_-]{50,}"),
    _token("huggingface_token", "h", r"f_[A-Za-z0-9]{30,}"),
    _token("twilio_api_key", "S", r"K[0-9a-fA-F]{32}" + _END),
    _token("sendgrid_api_key", "S", r"G\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _token("digitalocean_token", "d", r"o[por]_v1_[a-f0-9]{64}" + _END),
    _token("shopify_token", "s", r"hp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _END),
    _token("atlassian_api_token", "A", r"TATT3[A-Za-z0-9_=-]{50,}"),
    _token("databricks_token", "d", r"api[a-f0-9]{32}(?:-[0-9]+)?" + _END),
    _token("groq_api_key", "g", r"sk_[A-Za-z0-9]{48,}"),
    _token("xai_api_key", "x", r"ai-[A-Za-z0-9]{60,}"),
    _token("replicate_api_token", "r", r"8_[A-Za-z0-9]{37}" + _END),
    _token("perplexity_api_key", "p", r"plx-[A-Za-z0-9]{40,}"),
    _token("linear_api_key", "l", r"in_api_[A-Za-z0-9]{40}" + _END),
    _token("postman_api_key", "P", r"MAK-[a-f0-9]{24}-[a-f0-9]{34}" + _END),
    _token("vault_token", "h", r"v[sb]\.[A-Za-z0-9_-]{24,}"),
    _token("doppler_token", "d", r"p\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    _token("sentry_token", "s", r"ntry[su]_[A-Za-z0-9_+/=-]{40,}"),
    _token("supabase_key", "s", r"(?:bp_[a-f0-9]{40}" + _END + r"|b_secret_[\w-]{20,})"),
    _token("notion_token", "n", r"tn_[A-Za-z0-9]{40,}"),
    _token("notion_token", "s", r"ecret_[A-Za-z0-9]{43}" + _END),
    _token(
        "grafana_token",
        "g",
        r"l(?:c_[A-Za-z0-9+/]{32,}={0,2}|sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _END + ")",
    ),
    _token("square_token", "s", r"q0(?:atp|csp)-[A-Za-z0-9_-]{22,}"),
    _token("langsmith_api_key", "l", r"sv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _END),
    _token(
        "telegram_bot_token",
        "[0-9]",
        r"[0-9]{7,9}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])",
    ),
    _token(
        "discord_bot_token",
        "[MNO]",
        r"[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![\w-])",
    ),
    _token("age_secret_key", "A", r"GE-SECRET-KEY-1[0-9A-Z]{58}" + _END),
    # JFrog Artifactory API keys: "AKCp" and 69 letters or digits (JFrog docs, "API Key";
    # the format detect-secrets' ArtifactoryDetector looks for).
    _token("artifactory_api_key", "A", r"KCp[A-Za-z0-9]{69}" + _END),
    # Mailgun private API keys: "key-" and 32 hex digits (Mailgun API docs, "Authentication").
    _token("mailgun_api_key", "k", r"ey-[0-9a-f]{32}" + _END),
    # Mailchimp API keys end in their data centre: 32 hex digits, "-us6"
    # (Mailchimp Marketing API, "Quick start").
    _token("mailchimp_api_key", "[0-9a-f]", r"[0-9a-f]{31}-us[0-9]{1,2}" + _END),
    # A Heroku API key is a bare UUID (``heroku auth:token``), so only one that follows
    # the word "heroku" on the same line, with no word in between that names an id
    # (app, dyno, release, build, session, request), counts.
    _rule(
        "heroku_api_key",
        r"[Hh](?i:eroku)(?:(?!(?i:id|app|apps|dyno|release|build|session|request)\b)"
        r"[A-Za-z_]*[^A-Za-z_\r\n]){0,12}?"
        r"(?<![0-9A-Fa-f-])(?P<value>[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}"
        r"-[0-9A-Fa-f]{12})(?![0-9A-Fa-f-])",
        "value",
    ),
)

# A PuTTY private key file (PuTTY manual, appendix C "PPK file format"): the header
# line, PuTTY's own "Name: value" lines and base64 lines, up to and with "Private-MAC"
# (or "Private-Hash" in version 1 files). The whole file goes, like a PEM block; a
# file cut short loses its header and the PuTTY and base64 lines after it, never a
# line of any other shape.
_PUTTY_NEWLINE = r"(?:\r?\n|\\r?\\n)[ \t]*"
_PUTTY_LINE = (
    r"(?:(?:Encryption|Comment|Public-Lines|Private-Lines|Key-Derivation|Argon2-[A-Za-z]+):"
    r"[^\r\n\\]*|[A-Za-z0-9+/=]+)[ \t]*(?![^\r\n\\])"
)
_PUTTY_RULES = (
    _rule(
        "putty_private_key",
        r"PuTTY-User-Key-File-[0-9]+:[^\r\n\\]*"
        rf"(?:{_PUTTY_NEWLINE}{_PUTTY_LINE})*"
        rf"(?:{_PUTTY_NEWLINE}Private-(?:MAC|Hash):[ \t]*[0-9A-Fa-f]*)?",
    ),
)

_JWT_RULES = (
    _token(
        "jwt",
        "e",
        r"yJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}"
        r"\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}",
    ),
)

