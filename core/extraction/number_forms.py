"""The written forms of one number, made one: digit grouping, a zero fraction, a protocol.

The tombstone check (:mod:`bli_memory.core.extraction.tombstones`) compares a forgotten
memory and a new statement after writing their numbers one way, so that ``8,443``,
``8 443``, ``8443.0`` and ``8443/tcp`` are the 8443 that was forgotten, while numbers
that differ (``8.4`` and ``84``, the version ``1.2.3`` and ``123``, ``1.250 ms`` and
``1,250 ms``) stay apart. Pure functions on the standard library.
"""

from __future__ import annotations

import re

__all__ = ["plain_numbers", "ungroup"]

#: A number written with digit grouping (:func:`ungroup`): one to three digits, then groups
#: of exactly three, every group after the same separator (comma, underscore, apostrophe,
#: dot, a plain, thin or no-break space).
_GROUPED = re.compile(
    r"(?<!\w)(?<!\d[,_'. \u00a0\u2009\u202f])"  # the number starts here
    r"\d{1,3}(?P<sep>[,_'. \u00a0\u2009\u202f])\d{3}(?:(?P=sep)\d{3})*"
    r"(?!\d)(?!(?P=sep)\d)")  # ... and ends here, no further group of another length

#: Some separator of :data:`_GROUPED` between two digits: what makes the regex worth running.
_MAYBE_GROUPED = re.compile(r"\d[,_'. \u00a0\u2009\u202f]\d")


def ungroup(text: str) -> str:
    """``text`` with every number written with digit grouping written without it.

    ``8,443``, ``8_443``, ``8'443``, ``8.443``, ``8 443``, ``8\u2009443``, ``8\u202f443`` and
    ``1.234.567`` are 8443 and 1234567: the groupings of English, Python and C++ literals,
    Swiss, German/Spanish/Italian and French/SI (ISO 31-0, SI Brochure 5.4.4) writing.

    The rule, so that different numbers stay different: the whole number must be grouped,
    one to three digits then groups of exactly three, each after the *same* separator,
    with no digit, word character or dotted or grouped digit right before it and no digit
    or further group of another length after it. So ``8.4``, ``8.44`` and ``84`` stay
    three values, as do the version ``1.2.3`` and ``123``, ``1.100.0`` (its last group is
    short), ``v1.234`` (a word before it), ``2024.01.15``, ``555 123 4567`` and ``80, 443``
    (a comma and a space: a list). ``1,234.5`` is 1234.5 (grouping, then a decimal).

    A dot is no grouping where the number says what it is: after a word that a version
    follows (:data:`_VERSION_WORDS`: ``Version 1.234``, ``Python 3.120`` stay versions, as
    ``v1.234`` does), or, when it is the one dot, before a unit of measure
    (:data:`_UNITS`: ``1.250 ms`` is a decimal, as SI writes one, so it is not
    ``1,250 ms``, English for 1250 ms).

    The cost of reading a dot or a space as grouping elsewhere: a decimal with exactly
    three places (``8.443`` meant as eight point four four three) is the same value as
    8443, and two numbers written side by side (``ports 80 443``) are one. For a tombstone
    that errs on the side of keeping a forgotten memory forgotten; both sides of every
    comparison are read the same way, so equal texts stay equal.
    """
    if not _MAYBE_GROUPED.search(text):
        return text
    return _GROUPED.sub(_ungrouped, text)


#: Words a version follows: a dot after them separates a version's parts, it groups no digits.
_VERSION_WORDS = frozenset(
    """
    version versions ver v release rev revision python node nodejs ruby java go golang rust
    perl php postgres postgresql mysql sqlite redis django rails ubuntu debian alpine fedora
    macos ios android kotlin scala swift dotnet gcc clang llvm kernel linux
    """.split())

#: Units of measure (SI and the usual ones of computing): a number before one is a quantity.
#: Micro is both the micro sign and the Greek mu it becomes under NFKC.
_UNITS = frozenset(
    """
    ns us \u00b5s \u03bcs ms s sec secs second seconds min mins minute minutes h hr hrs hour hours
    b kb mb gb tb kib mib gib tib byte bytes bit bits kbps mbps gbps hz khz mhz ghz
    m mm cm km g kg mg l ml px pt em rem rps qps rpm % percent
    """.split())


def _ungrouped(m: re.Match[str]) -> str:
    """One match of :data:`_GROUPED` without its grouping, or as written (:func:`ungroup`)."""
    number = m.group()
    if m.group("sep") == ".":
        before = re.search(r"([A-Za-z]+)\W*$", m.string[max(0, m.start() - 30):m.start()])
        if before and before.group(1).lower() in _VERSION_WORDS:
            return number
        after = re.match(r"\s*([a-z\u00b5\u03bc%]+)", m.string[m.end():m.end() + 30].lower())
        if after and number.count(".") == 1 and after.group(1).lower() in _UNITS:
            return number
    return re.sub(r"\D", "", number)


#: A number whose fractional part is only zeros (``8443.0``): the whole number.
_ZERO_FRACTION = re.compile(r"(?<![\w.])(\d+)\.0+(?!\d)(?!\.\w)")

#: A port with its protocol, as /etc/services and Docker write it (``8443/tcp``): the port,
#: then the protocol as a word of its own.
_PORT_PROTOCOL = re.compile(r"(?<=\d)/(tcp|udp|sctp)\b", re.IGNORECASE)


def plain_numbers(text: str) -> str:
    """``text`` with digit grouping gone (:func:`ungroup`), ``8443.0`` written 8443 and
    ``8443/tcp`` written ``8443 tcp``."""
    text = ungroup(text)
    if "." in text:
        text = _ZERO_FRACTION.sub(r"\1", text)
    if "/" in text:
        text = _PORT_PROTOCOL.sub(r" \1", text)
    return text
