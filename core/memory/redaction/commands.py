"""Rules for secrets passed on command lines, the way people paste them into a session."""

from __future__ import annotations

from bli_memory.core.memory.redaction.patterns import _QUOTED_SECRET_NAME, _SET_VALUE, _rule

__all__ = []

_SECRET_FLAG_WORD = r"(?:password|passwd|passphrase|pass|secret|token|api[_-]?key|credentials?)"

# Words that follow a flag in prose or help text rather than being its value ("-storepass
# and -keypass must match", "--password once", "-storepass arg  keystore password").
_PROSE_WORD = (
    r"(?:(?i:and|or|to|the|a|an|is|are|if|in|on|of|for|with|without|instead|options?|flags?"
    r"|arguments?|when|then|from|as|at|by|it|so|but|not|only|here|there|prompts?|asks?)"
    # ... and, in lower case only (a capital "Once" may well be a password):
    r"|must|should|can|may|accepts?|takes?|defaults?|matches|once|twice|args?|values?)"
)
# The stand-ins help and docs write in capitals for these flags' own values; another
# capital word (ROOTPASS, ADMINPASS) may be a real password.
_CAPITAL_STAND_IN = r"(?:STOREPASS|KEYPASS|PASSWORD|PASSWD)"
# The value of a flag that takes a password, whatever its shape: after a space or '=',
# not another flag, a reference, the next word of prose or a stand-in; a full stop,
# comma or semicolon that ends the sentence is not part of it.
_WORD_FLAG_VALUE = (
    r"(?:[ \t]+|=)(?![-$<])"
    rf"(?!(?:{_PROSE_WORD}|{_CAPITAL_STAND_IN})[.,;:]?(?![^\s\"'`]))"
    r"[\"']?(?P<value>[^\s\"'`]+?)(?=[.,;]?(?![^\s\"'`]))"
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
    # A flag named for a password takes any word: --password kangaroo.
    _rule(
        "cli_password",
        r"--(?<![\w-]--)(?i:[\w-]*?(?:password|passwd|passphrase))" + _WORD_FLAG_VALUE,
        "value",
    ),
    # Java's keytool and jarsigner: -storepass, -keypass, -srcstorepass, -deststorepass,
    # -srckeypass, -destkeypass VALUE (keytool(1); -storepass:env NAME and :file PATH
    # name where the password is), and keytool -storepasswd/-keypasswd -new VALUE.
    _rule(
        "cli_password",
        r"-(?<![\w-]-)(?:src|dest)?(?:store|key)pass" + _WORD_FLAG_VALUE,
        "value",
    ),
    _rule(
        "cli_password",
        r"keytool(?<![\w-]keytool)\b[^\r\n]{0,400}?[ \t]-new" + _WORD_FLAG_VALUE,
        "value",
    ),
    # dotnet user-secrets [options] set KEY VALUE, the key named for a secret with its
    # sections before it (Db:Password, Stripe:ApiKey).
    _rule(
        "cli_password",
        r"user-secrets(?<![\w-]user-secrets)[^\r\n;&|]{0,200}?[ \t]set[ \t]+"
        rf"(?P<kq>[\"']?)(?:[\w.-]+:)*{_QUOTED_SECRET_NAME}(?P=kq)" + _SET_VALUE,
        "value",
    ),
    # echo VALUE | sudo -S (sudo(8): -S reads the password from standard input).
    _rule(
        "cli_password",
        r"echo(?<![\w-]echo)[ \t]+[\"']?(?P<value>[^\s\"'`|]+)[\"']?"
        r"[ \t]*\|[ \t]*sudo\b[^\r\n|]{0,80}?[ \t]-S\b",
        "value",
    ),
    # htpasswd -b FILE USER VALUE and htpasswd -nb USER VALUE (htpasswd(1): -b takes the
    # password from the command line, -n prints instead of writing a file).
    _rule(
        "cli_password",
        r"htpasswd(?<![\w-]htpasswd)(?=(?:[ \t]+-[A-Za-z]+)*?[ \t]+-[A-Za-z]*b)(?:[ \t]+-[A-Za-z]+)+"
        r"[ \t]+[^\s-]\S*[ \t]+(?:[^\s-]\S*[ \t]+)?[\"']?(?P<value>[^\s\"'`;|&]+)[\"']?"
        r"(?=[ \t]*(?:[;&|>]|(?![^\r\n])))",
        "value",
    ),
    # echo USER:VALUE | chpasswd (chpasswd(8) reads user:password lines).
    _rule(
        "cli_password",
        r"echo(?<![\w-]echo)[ \t]+(?:-e[ \t]+)?[\"']?[^\s:\"'`]+:(?P<value>[^\s\"'`|]+)[\"']?"
        r"[ \t]*\|[ \t]*(?:sudo[ \t]+)?chpasswd\b",
        "value",
    ),
    # Windows: net user USER VALUE [/add], a value with a digit or symbol (not *, which
    # prompts, nor a /switch; "net user accounts are ..." is prose).
    _rule(
        "cli_password",
        r"[Nn](?<![\w-].)(?i:et[ \t]+user)[ \t]+(?:\"[^\"\r\n]+\"|[^\s/*\"]+)[ \t]+"
        r"(?=[^\s\"]*[0-9!@#$%^&*+=~?])(?P<value>[^\s/*\"][^\s\"]*)",
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
        # The password holds no bare colon (libpq escapes one as \:), so an IPv6 address
        # is not read as a line; a lone * is a placeholder; a port has two digits or more
        # (a file:line:column reference, urn:1:... and task:7:... have one).
        r"(?m)^[ \t]*[\w.*-]+:(?:\d{2,5}|\*):[\w.*-]+:[\w.*@-]+:"
        r"(?!\*[ \t]*$)(?P<value>(?:[^\s:\\]|\\.)+)[ \t]*$",
        "value",
    ),
    # ...and the same line after other text ("from my notes: db.internal:5432:app:backup:
    # Wq8e..."), where more than a .pgpass line has this shape (a Redis key, a file:line:
    # column reference, a URN): the host must be a host name with a dot, localhost or an
    # address, the port a port, and the password look made up (8+ characters with a
    # digit and a symbol or both cases, no colon, no URL or call characters).
    _rule(
        "pgpass_password",
        r"(?<![\w.*:/-])(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|localhost|\*):(?:\d{2,5}|\*)"
        r":[\w.*-]+:[\w.*@-]+:"
        r"(?P<value>(?=[^\s:?=/()\"']{8,64}(?![^\s.,;)]))(?=[^\s:]*?[0-9])"
        r"(?=[^\s:]*?[!@#$%^&*+~]|[^\s:]*?[a-z][^\s:]*?[A-Z]|[^\s:]*?[A-Z][^\s:]*?[a-z])"
        r"[^\s:?=/()\"']{8,64})",
        "value",
    ),
    # key=value pairs inside another flag: kubectl --from-literal=password=VALUE,
    # helm --set db.password=VALUE, quoted too (--from-literal=DB_PASSWORD='two words').
    _rule(
        "cli_password",
        rf"(?:--from-literal=|--set(?:-string)?[ \t=])[\w.-]*?(?i:{_SECRET_FLAG_WORD})="
        r"(?P<q>[\"'])?(?P<value>(?(q)[^\"'\r\n]+|[^\s\"'`,]+))(?(q)(?P=q))",
        "value",
    ),
)
