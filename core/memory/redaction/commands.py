"""Rules for secrets passed on command lines, the way people paste them into a session."""

from __future__ import annotations

from bli_memory.core.memory.redaction.patterns import _rule

__all__ = []

_SECRET_FLAG_WORD = r"(?:password|passwd|passphrase|pass|secret|token|api[_-]?key|credentials?)"

# Words that follow a flag in prose rather than being its value.
_PROSE_WORD = (
    r"(?i:and|or|to|the|a|an|is|are|if|in|on|of|for|with|without|instead|option|flag"
    r"|argument|when|then|from|as|at|by|it|so|but|not|only|here|there|prompts?|asks?)"
)

# Secrets passed on command lines, the way people paste them into a session.
_COMMAND_LINE_RULES = (
    # Registry logins: docker/podman/helm/oras login -p VALUE / --password VALUE.
    _rule(
        "cli_password",
        r"(?i:\b(?:docker|podman|nerdctl|buildah|helm|oras|skopeo)[ \t]+(?:registry[ \t]+)?login\b)"
        r"[^\r\n]{0,400}?[ \t](?:-p|--password)(?:[ \t]+|=)(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # Azure CLI: az login -u USER -p VALUE (also --password), az acr login -p VALUE.
    _rule(
        "cli_password",
        r"az(?<![\w-]az)[ \t]+(?:acr[ \t]+)?login\b"
        r"[^\r\n]{0,400}?[ \t](?:-p|--password)(?:[ \t]+|=)[\"']?(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # sshpass -p VALUE and sshpass -pVALUE (sshpass(1)); redis-cli -a VALUE (redis-cli --help).
    _rule(
        "cli_password",
        r"sshpass(?<![\w-]sshpass)\b[^\r\n]{0,400}?[ \t]-p[ \t]*[\"']?(?P<value>[^\s\"'`]+)",
        "value",
    ),
    _rule(
        "cli_password",
        r"redis-cli(?<![\w-]redis-cli)\b[^\r\n]{0,400}?[ \t](?:-a|--pass)[ \t]+[\"']?(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # MySQL-family clients take the password glued to -p: mysql -uroot -pVALUE.
    _rule(
        "cli_password",
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\r\n]{0,400}?[ \t]-p(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # A long flag named for a secret, with its value after a space or '=':
    # --password VALUE, --api-key=VALUE, --auth-token VALUE (not --password-stdin).
    _rule(
        "cli_password",
        rf"(?<![\w-])--(?i:[\w-]*?{_SECRET_FLAG_WORD})(?:[ \t]+|=)(?![-$])"
        r"(?=[^\s\"'`]*[0-9!@#%^&*_+=/.:~])(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # A flag named for a password takes any word: --password kangaroo. Not another
    # flag, a reference, or the next word of prose ("pass it with --password and ...").
    _rule(
        "cli_password",
        r"--(?<![\w-]--)(?i:[\w-]*?(?:password|passwd|passphrase))(?:[ \t]+|=)(?![-$<])"
        rf"(?!{_PROSE_WORD}(?![^\s\"'`]))[\"']?(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # echo VALUE | sudo -S (sudo(8): -S reads the password from standard input).
    _rule(
        "cli_password",
        r"echo(?<![\w-]echo)[ \t]+[\"']?(?P<value>[^\s\"'`|]+)[\"']?"
        r"[ \t]*\|[ \t]*sudo\b[^\r\n|]{0,80}?[ \t]-S\b",
        "value",
    ),
    # openssl enc/pkcs12/... -k VALUE, -pass pass:VALUE, -passin/-passout pass:VALUE
    # (openssl-passphrase-options(1)).
    _rule(
        "cli_password",
        r"openssl(?<![\w-]openssl)\b[^\r\n]{0,400}?[ \t](?:-k[ \t]+|-pass(?:in|out)?[ \t]+pass:)"
        r"[\"']?(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # A .netrc entry: machine HOST login USER password VALUE (netrc(5)).
    _rule(
        "netrc_password",
        r"machine(?<![\w-]machine)[ \t]+\S+(?:[ \t]+login[ \t]+\S+)?[ \t]+password[ \t]+(?P<value>\S+)",
        "value",
    ),
    # A .pgpass line: host:port:database:user:password (libpq, "The Password File").
    _rule(
        "pgpass_password",
        r"(?m)^[ \t]*[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.*@-]+:(?P<value>[^\s:][^\s]*)[ \t]*$",
        "value",
    ),
    # Python requests: auth=("user", "VALUE") / HTTPBasicAuth("user", "VALUE").
    _rule(
        "basic_auth",
        r"(?:auth[ \t]*=[ \t]*\(|HTTPBasicAuth\()[ \t]*[\"'][^\"'\r\n]*[\"'][ \t]*,[ \t]*[\"']"
        r"(?P<value>[^\"'\r\n]+)[\"']",
        "value",
    ),
    # key=value pairs inside another flag: kubectl --from-literal=password=VALUE,
    # helm --set db.password=VALUE.
    _rule(
        "cli_password",
        rf"(?:--from-literal=|--set(?:-string)?[ \t=])[\w.-]*?(?i:{_SECRET_FLAG_WORD})="
        r"(?P<value>[^\s\"'`,]+)",
        "value",
    ),
)
