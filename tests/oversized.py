"""Memory texts over the size limit only once their secrets are counted (tests of the size check)."""

from __future__ import annotations

import base64
import hashlib

from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS

__all__ = ["KEY", "fits_only_masked"]

_BODY = "\n".join(base64.b64encode(hashlib.sha512(bytes([n])).digest()).decode() for n in range(45))
#: A PEM private key of about 4,000 characters; masked, it is ``[REDACTED:private_key]``.
KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{_BODY}\n-----END RSA PRIVATE KEY-----"


def fits_only_masked(over: int = 500) -> str:
    """A note ``over`` characters past the limit as given, well under it once its key is masked.

    The size is checked on the text as given, before the masking (which reads the whole
    text): this note is refused, and the refusal names its length as given.
    """
    filler = "The release checklist lives in docs/release.md and is read before every tag. "
    head = "Deploy notes. The signing key of the build robot follows. "
    room = MAX_CONTENT_CHARS + over - len(head) - len(KEY) - 1
    text = head + (filler * (room // len(filler) + 1))[:room] + "\n" + KEY
    assert len(text) == MAX_CONTENT_CHARS + over
    return text
