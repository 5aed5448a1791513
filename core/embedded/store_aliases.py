"""Tags that name one space (``space_aliases``): resolve, declare, list.
"""

from __future__ import annotations

from bli_memory.core.embedded.store_base import StoreBase, now_iso

__all__ = [
    "SpaceAliases",
]


class SpaceAliases(StoreBase):
    """Aliases of spaces."""

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """Canonical tag for ``tag`` and every tag that names the same space.

        Returns:
            ``(canonical, (canonical, alias, ...))``; a tag with no alias row is its own
            canonical space.
        """
        with self._read() as conn:
            row = conn.execute(
                "SELECT canonical FROM memory_space_aliases WHERE alias = ?", (tag,)
            ).fetchone()
            canonical = row[0] if row else tag
            aliases = [
                r[0]
                for r in conn.execute(
                    "SELECT alias FROM memory_space_aliases WHERE canonical = ? ORDER BY alias",
                    (canonical,),
                )
            ]
        return canonical, tuple(dict.fromkeys([canonical, *aliases]))

    def add_alias(self, alias: str, canonical: str) -> None:
        """Declare that ``alias`` names the same space as ``canonical``."""
        if alias == canonical:
            return
        with self._write() as conn:
            conn.execute(
                "INSERT INTO memory_space_aliases (alias, canonical, created_at) VALUES (?, ?, ?) "
                "ON CONFLICT (alias) DO UPDATE SET canonical = excluded.canonical",
                (alias, canonical, now_iso()),
            )

    def aliases(self) -> dict[str, list[str]]:
        """Every declared alias: ``{canonical: [alias, ...]}``."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT canonical, alias FROM memory_space_aliases ORDER BY canonical, alias"
            ).fetchall()
        out: dict[str, list[str]] = {}
        for canonical, alias in rows:
            out.setdefault(canonical, []).append(alias)
        return out
