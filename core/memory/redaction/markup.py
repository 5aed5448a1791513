"""Rules for secrets in markup and in name/value pairs.

- An element named for a secret holds it as its text (on its own line between the tags,
  or in a CDATA section), and so does one that names it in its ``name`` or ``key``
  attribute (``<property name="password">VALUE</property>``): ``<password>VALUE</password>``,
  ``<secret>VALUE</secret>``, ``<apiKey>VALUE</apiKey>`` (Maven's ``settings.xml``, .NET
  and Java config, tool output). Attributes (``<user password="VALUE"/>``) are
  assignments and are masked by :mod:`~bli_memory.core.memory.redaction.named`.
- A secret named in one field and given in the next: .NET ``appSettings``
  (``<add key="DbPassword" value="VALUE"/>``, either attribute first), Spring and Ant
  (``<property name="password" value="VALUE"/>``), and a Kubernetes container's
  ``env`` list, in YAML (``- name: DB_PASSWORD`` then ``value: VALUE``, either first, or
  the flow form ``- {name: DB_PASSWORD, value: VALUE}``) or JSON
  (``{"name": "DB_PASSWORD", "value": "VALUE"}``).

The name must end in a secret word (its head noun: ``<passwordPolicy>`` is a policy),
or hold pw, pwd or pass as a word of it, and not end in a word describing the secret
(``<tokenUrl>``, ``name: TOKEN_TTL``), as for assignments.
"""

from __future__ import annotations

from bli_memory.core.memory.redaction.named import _SHORT_PASSWORD_WORD
from bli_memory.core.memory.redaction.patterns import _DESCRIPTIVE_WORDS, _SECRET_HEAD, _rule
from bli_memory.core.memory.redaction.prose import _PROSE_WORDS

__all__ = []

# An XML name or environment variable name that says it holds a secret.
_PAIR_NAME = (
    rf"(?=[\w.:-]{{0,80}}?(?:{_SECRET_HEAD}(?![\w.:-])|{_SHORT_PASSWORD_WORD}))"
    rf"(?![\w.:-]{{0,80}}?(?:[_.:-]|[a-z0-9](?=[A-Z]))(?i:{_DESCRIPTIVE_WORDS})(?![\w.:-]))"
    r"[A-Za-z_][\w.:-]{0,80}"
)
# Spaces, or a line break and the next line's indentation, around an element's text.
_GAP = r"[ \t]*(?:\r?\n[ \t]*)?"
_QUOTED = r"(?P<vq>[\"'])(?P<value>(?:(?!(?P=vq))[^\r\n]){1,512})(?P=vq)"

_MARKUP_RULES = (
    # <password>VALUE</password>, with attributes on the opening tag, spaces or a line
    # break around the text, or the text in a CDATA section.
    _rule(
        "markup_secret",
        rf"<(?=(?P<tag>{_PAIR_NAME})[ \t>])(?P=tag)(?:[ \t][^<>\r\n]{{0,512}})?>"
        rf"{_GAP}(?P<cdata><!\[CDATA\[)?(?!(?i:{_PROSE_WORDS})[ \t])"
        rf"(?P<value>(?(cdata)(?:(?!\]\]>)[^\r\n]){{1,512}}|[^<\r\n]{{1,512}}?))(?(cdata)\]\]>)"
        rf"{_GAP}</(?P=tag)[ \t]*>",
        "value",
    ),
    # <property name="password">VALUE</property>, <entry key="password">VALUE</entry>.
    _rule(
        "markup_secret",
        r"<(?P<tag>[A-Za-z_][\w.:-]{0,80})[ \t][^<>\r\n]{0,256}?(?<![\w-])(?:key|name)[ \t]*=[ \t]*"
        rf"(?P<kq>[\"']){_PAIR_NAME}(?P=kq)[^<>\r\n]{{0,256}}?(?<!/)>{_GAP}"
        rf"(?!(?i:{_PROSE_WORDS})[ \t])(?P<value>[^<\r\n]{{1,512}}?){_GAP}</(?P=tag)[ \t]*>",
        "value",
    ),
    # <add value="VALUE" key="DbPassword"/>: the value before the name.
    _rule(
        "markup_secret",
        r"v(?<![\w-]v)alue[ \t]*=[ \t]*" + _QUOTED + r"[^<>\r\n]{0,256}?[ \t](?:key|name)[ \t]*=[ \t]*"
        + r"(?P<kq>[\"'])" + _PAIR_NAME + r"(?P=kq)",
        "value",
    ),
    # <add key="DbPassword" value="VALUE"/>, <property name="password" value="VALUE"/>.
    _rule(
        "markup_secret",
        r"[kn](?<![\w-].)(?:ey|ame)[ \t]*=[ \t]*(?P<kq>[\"'])" + _PAIR_NAME + r"(?P=kq)"
        r"[^<>\r\n]{0,256}?[ \t]value[ \t]*=[ \t]*" + _QUOTED,
        "value",
    ),
    # A Kubernetes env entry in YAML: "- name: DB_PASSWORD" then "value: VALUE".
    _rule(
        "env_secret",
        r"n(?<![\w-]n)ame:[ \t]*(?P<nq>[\"']?)" + _PAIR_NAME + r"(?P=nq)[ \t]*\r?\n"
        r"[ \t]*value:[ \t]*(?P<vq>[\"'])?"
        r"(?P<value>(?(vq)(?:(?!(?P=vq))[^\r\n]){1,512}|[^\s\"'#][^\s#]*))(?(vq)(?P=vq))",
        "value",
    ),
    # ...with value: first ("- value: VALUE" then "name: DB_PASSWORD")...
    _rule(
        "env_secret",
        r"v(?<![\w-]v)alue:[ \t]*(?P<vq>[\"'])?"
        r"(?P<value>(?(vq)(?:(?!(?P=vq))[^\r\n]){1,512}|[^\s\"'#][^\s#]*))(?(vq)(?P=vq))"
        r"[ \t]*\r?\n[ \t]*name:[ \t]*(?P<nq>[\"']?)" + _PAIR_NAME + r"(?P=nq)[ \t]*(?![^\r\n])",
        "value",
    ),
    # ...in YAML's flow form: - {name: DB_PASSWORD, value: VALUE}...
    _rule(
        "env_secret",
        r"n(?<![\w-]n)ame:[ \t]*(?P<nq>[\"']?)" + _PAIR_NAME + r"(?P=nq)[ \t]*,[ \t]*"
        r"value:[ \t]*(?P<vq>[\"'])?"
        r"(?P<value>(?(vq)(?:(?!(?P=vq))[^\r\n]){1,512}|[^\s\"',}]+))(?(vq)(?P=vq))",
        "value",
    ),
    # ...and in JSON: {"name": "DB_PASSWORD", "value": "VALUE"}.
    _rule(
        "env_secret",
        r"\"name\"[ \t]*:[ \t]*\"" + _PAIR_NAME + r"\"[ \t]*,\s{0,80}"
        r"\"value\"[ \t]*:[ \t]*\"(?P<value>(?:[^\"\\\r\n]|\\[^\r\n]){1,512})\"",
        "value",
    ),
)
