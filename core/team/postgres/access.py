"""People, device tokens, space shares and aliases of the team store.

Device tokens are stored as SHA-256 hashes only. A share lets one person read (or also
change) another person's space; an alias makes two container tags name one space.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.team.postgres.base import PgCore, checked_tag, iso_utc, one_row, utc_now

__all__ = ["TOKEN_PREFIX", "AccessMixin", "DeviceToken", "Principal", "hash_token"]

#: Device tokens start with this, so a leaked one is recognisable by secret scanners.
TOKEN_PREFIX = "blim_"


def hash_token(token: str) -> str:
    """SHA-256 hex of a device token: the only form in which a token is stored.

    Tokens are 256 random bits (:func:`secrets.token_urlsafe`), so a fast hash is
    enough: there is nothing to brute-force, unlike a password.
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: the person and the device token that proved it."""

    person_id: int
    person: str
    device_id: str
    device: str


@dataclass(frozen=True)
class DeviceToken:
    """One device token as listed (never the token itself)."""

    id: str
    person: str
    device: str
    created_at: str
    last_used_at: str | None
    revoked_at: str | None



class AccessMixin(PgCore):
    """People, device tokens, shares and aliases (part of :class:`PostgresBackend`)."""

    def ensure_person(self, name: str) -> int:
        """Id of the person called ``name``, created if new."""
        name = (name or "").strip()
        if not name or len(name) > 200:
            raise InvalidInputError("a person's name must be 1 to 200 characters")
        with self._tx("record a person") as conn:
            conn.execute(
                "INSERT INTO memory_people (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (name,)
            )
            row = one_row(conn.execute("SELECT id FROM memory_people WHERE name = %s", (name,)).fetchone(),
                          "record a person")
        return int(row[0])

    def _known_person(self, name: str) -> int:
        try:
            return self._person_id(name)
        except NotFoundError:
            shown = name if len(name) <= 200 else name[:200] + "…"
            raise NotFoundError(f"no person named {shown!r}: check the spelling, or give --create-person "
                                "to create them") from None

    def _person_id(self, name: str) -> int:
        with self._conn("find a person") as conn:
            row = conn.execute("SELECT id FROM memory_people WHERE name = %s", (name,)).fetchone()
        if row is None:
            raise NotFoundError(f"no person named {name!r}")
        return int(row[0])

    def create_token(self, person: str, device: str) -> tuple[str, str]:
        """Issue a device token for ``person`` (created if new).

        Args:
            person: The person's name.
            device: A label for the machine (``laptop``, ``ci``, ...).

        Returns:
            ``(token_id, token)``. The token is shown once: only its SHA-256 is stored.
        """
        device = (device or "").strip()
        if not device or len(device) > 200:
            raise InvalidInputError("a device name must be 1 to 200 characters")
        person_id = self.ensure_person(person)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token_id = str(uuid.uuid4())
        with self._tx("store a device token") as conn:
            conn.execute(
                "INSERT INTO memory_device_tokens (id, person_id, device, token_sha256) "
                "VALUES (%s, %s, %s, %s)",
                (token_id, person_id, device, hash_token(token)),
            )
        return token_id, token

    def device_token_key(self, token_id: str) -> tuple[Principal, str] | None:
        """The :class:`Principal` of the live device token ``token_id`` and its stored SHA-256
        hex (what a browser session is signed with, :mod:`bli_memory.core.ui.service_guard`),
        or None (unknown, revoked, or not a UUID)."""
        try:
            key = str(uuid.UUID(str(token_id)))
        except ValueError:
            return None
        with self._conn("check a browser session") as conn:
            row = conn.execute(
                "SELECT t.id, t.person_id, p.name, t.device, t.token_sha256 FROM memory_device_tokens t "
                "JOIN memory_people p ON p.id = t.person_id WHERE t.id = %s AND t.revoked_at IS NULL",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return Principal(person_id=int(row[1]), person=row[2], device_id=str(row[0]), device=row[3]), row[4]

    def revoke_token(self, token_id: str) -> bool:
        """Revoke a device token by id; returns False if no live token has that id."""
        try:
            uuid.UUID(str(token_id))
        except ValueError as exc:
            raise InvalidInputError(f"{token_id!r} is not a token id") from exc
        with self._tx("revoke a device token") as conn:
            cur = conn.execute(
                "UPDATE memory_device_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
                (token_id,),
            )
            return cur.rowcount == 1

    def list_tokens(self, person: str | None = None) -> list[DeviceToken]:
        """Every device token (optionally of one person), oldest first; never the token."""
        sql = (
            "SELECT t.id, p.name, t.device, t.created_at, t.last_used_at, t.revoked_at "
            "FROM memory_device_tokens t JOIN memory_people p ON p.id = t.person_id"
        )
        args: tuple[Any, ...] = ()
        if person is not None:
            sql += " WHERE p.name = %s"
            args = (person,)
        with self._conn("list device tokens") as conn:
            rows = conn.execute(sql + " ORDER BY t.created_at, t.id", args).fetchall()
        return [
            DeviceToken(id=str(r[0]), person=r[1], device=r[2], created_at=iso_utc(r[3]) or "",
                        last_used_at=iso_utc(r[4]), revoked_at=iso_utc(r[5]))
            for r in rows
        ]

    def authenticate(self, token: str) -> Principal | None:
        """The person and device of a live device token, or None.

        ``last_used_at`` is refreshed at most once a minute per token.
        """
        if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        digest = hash_token(token)
        with self._conn("check a device token") as conn:
            row = conn.execute(
                "SELECT t.id, t.person_id, p.name, t.device, t.last_used_at FROM memory_device_tokens t "
                "JOIN memory_people p ON p.id = t.person_id "
                "WHERE t.token_sha256 = %s AND t.revoked_at IS NULL",
                (digest,),
            ).fetchone()
            if row is None:
                return None
            if row[4] is None or utc_now() - row[4] > timedelta(minutes=1):
                conn.execute("UPDATE memory_device_tokens SET last_used_at = now() WHERE id = %s", (row[0],))
        return Principal(person_id=int(row[1]), person=row[2], device_id=str(row[0]), device=row[3])

    def share_space(self, *, owner: str, space: str, grantee: str, access: str = "read",
                    create_people: bool = False) -> None:
        """Let ``grantee`` read (or also change) ``owner``'s space ``space`` and its aliases.

        Args:
            owner: The name of the person whose space it is.
            space: A container tag (``[A-Za-z0-9_.:-]{1,128}``); an alias shares its
                canonical space.
            grantee: The name of the person who gets access.
            access: ``read`` or ``write``.
            create_people: Create ``owner`` and ``grantee`` when they are new; without
                it a name nobody has (a typo) is refused, never silently created.

        Raises:
            InvalidInputError: ``access`` is not ``read`` or ``write``, an invalid tag,
                or owner is grantee.
            NotFoundError: ``owner`` or ``grantee`` is nobody, without ``create_people``.
        """
        if access not in ("read", "write"):
            raise InvalidInputError("access must be read or write")
        space = checked_tag(space)
        if create_people:
            owner_id, grantee_id = self.ensure_person(owner), self.ensure_person(grantee)
        else:
            owner_id, grantee_id = self._known_person(owner), self._known_person(grantee)
        if owner_id == grantee_id:
            raise InvalidInputError("a person always has their own spaces; nothing to share")
        canonical = self._canonical(space)
        with self._tx("share a space") as conn:
            conn.execute(
                "INSERT INTO memory_space_shares (space, owner_id, grantee_id, access) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (space, grantee_id, owner_id) "
                "DO UPDATE SET access = excluded.access",
                (canonical, owner_id, grantee_id, access),
            )

    def unshare_space(self, *, owner: str, space: str, grantee: str) -> bool:
        """Withdraw a share; returns False when there was none.

        Raises:
            InvalidInputError: an invalid tag.
            NotFoundError: ``owner`` or ``grantee`` is nobody.
        """
        space = checked_tag(space)
        owner_id, grantee_id = self._person_id(owner), self._person_id(grantee)
        with self._tx("withdraw a share") as conn:
            cur = conn.execute(
                "DELETE FROM memory_space_shares WHERE space = %s AND owner_id = %s AND grantee_id = %s",
                (self._canonical(space), owner_id, grantee_id),
            )
            return cur.rowcount > 0

    def add_alias(self, alias: str, canonical: str) -> None:
        """Declare that the tag ``alias`` names the same space as ``canonical``.

        Raises:
            InvalidInputError: either is not a valid container tag.
        """
        alias, canonical = checked_tag(alias), checked_tag(canonical)
        if alias == canonical:
            return
        with self._tx("record a space alias") as conn:
            conn.execute(
                "INSERT INTO memory_space_aliases (alias, canonical) VALUES (%s, %s) "
                "ON CONFLICT (alias) DO UPDATE SET canonical = excluded.canonical",
                (alias, canonical),
            )

    def _canonical(self, tag: str) -> str:
        with self._conn("resolve a space") as conn:
            row = conn.execute(
                "SELECT canonical FROM memory_space_aliases WHERE alias = %s", (tag,)
            ).fetchone()
        return row[0] if row else tag

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """Canonical tag for ``tag`` and every tag naming the same space."""
        with self._conn("resolve a space") as conn:
            view = self._view(conn, tag)
        return view.canonical, view.spaces
