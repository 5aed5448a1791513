"""The engine's search with proposed changes applied, for side-by-side measurement.

``ENGINE_PATCHES`` holds the changes proposed for ``core/engine.py`` (old text -> new
text, at their indentation in that file) and ``STORE_METHODS`` the store method they
need. :func:`patched_backend_class` applies the chosen patches to the source of the
installed ``EmbeddedBackend.search`` and compiles the result, so what the benchmark
measures is the engine's own search plus exactly those changes. A patch the engine
already carries (its marker is found in the source) is skipped.

- ``hnsw``: the vector channel asks the HNSW side index (``core/vector_index.py``)
  when the engine hands one out, and similarities of the shown hits are computed
  exactly from the cached matrix for those rows only.
- ``context``: the ``context`` channel (``RankingConfig.context_weight``): the best
  shown hits share part of their fused score with their neighbours in the same session.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["ENGINE_PATCHES", "patched_backend_class", "store_neighbours"]

ENGINE_PATCHES: dict[str, list[tuple[str, str]]] = {
    "hnsw": [
        (
            """            qv = self._embed_one(q)
            sims = vs.matrix @ qv
            if cfg.weight("vector") > 0:
""",
            """            qv = self._embed_one(q)
            index = self._vector_index(spaces, vs)
            if index is None:
                sims = vs.matrix @ qv
            if cfg.weight("vector") > 0 and index is not None:
                rankings["vector"] = index.query(qv, n)
            elif cfg.weight("vector") > 0:
""",
        ),
        (
            """            if sims is not None:
                pos = int(np.searchsorted(vs.seqs, seq))
                if pos < len(vs.seqs) and int(vs.seqs[pos]) == seq:
                    similarity = round(float(sims[pos]), 4)
""",
            """            if qv is not None:
                pos = int(np.searchsorted(vs.seqs, seq))
                if pos < len(vs.seqs) and int(vs.seqs[pos]) == seq:
                    exact = sims[pos] if sims is not None else vs.matrix[pos] @ qv
                    similarity = round(float(exact), 4)
""",
        ),
    ],
    "context": [
        (
            """        fused = reciprocal_rank_fusion(rankings, cfg)
        if not fused:
""",
            """        fused = reciprocal_rank_fusion(rankings, cfg)
        if cfg.context_weight > 0 and fused:
            bonus = self._context_bonus(fused, rankings, spaces, cfg)
            for seq, extra in bonus.items():
                fused[seq] = fused.get(seq, 0.0) + extra
            rankings["context"] = list(bonus)
        if not fused:
""",
        ),
        (
            '                c for c in ("vector", "keyword_all", "keyword_any") '
            "if seq in channel_sets.get(c, ())\n",
            """                c for c in ("vector", "keyword_all", "keyword_any", "context")
                if seq in channel_sets.get(c, ())
""",
        ),
    ],
}

_MARKERS = {"hnsw": "_vector_index(", "context": "_context_bonus("}


def context_bonus(self: Any, fused: dict[int, float], rankings: dict[str, list[int]], spaces: Sequence[str],
                  cfg: Any) -> dict[int, float]:
    """Score the best shown hits pass to their neighbours in the same session.

    The ``cfg.context_top`` best fused rows found by a keyword channel each give
    ``cfg.context_weight`` times their fused score to the live rows just before and
    after them in the same space and session; a row next to two such hits keeps the
    larger share. (Proposed ``EmbeddedBackend._context_bonus``.)
    """
    # Only lexically anchored hits pass context on: a weak vector-only match must not
    # pull its neighbours into an answer (same LoCoMo recall as admitting similar ones).
    keyword = set(rankings.get("keyword_all", ())) | set(rankings.get("keyword_any", ()))
    ranked = sorted((s for s in fused if s in keyword), key=lambda s: (-fused[s], -s))
    parents = ranked[: cfg.context_top]
    bonus: dict[int, float] = {}
    for parent, kids in self.store.neighbours(parents, spaces).items():
        for kid in kids:
            bonus[kid] = max(bonus.get(kid, 0.0), cfg.context_weight * fused[parent])
    return bonus


def store_neighbours(self: Any, seqs: Iterable[int], spaces: Sequence[str]) -> dict[int, list[int]]:
    """Live rows just before and after each row in its session (proposed ``SQLiteStore.neighbours``).

    Rows without a ``session_id`` have no neighbours. Uses the index
    ``memories_session (space, session_id, seq) WHERE state = 'active'`` when present.
    """
    out: dict[int, list[int]] = {}
    with self._read() as conn:
        for seq in seqs:
            row = conn.execute("SELECT space, session_id FROM memories WHERE seq = ?", (int(seq),)).fetchone()
            if row is None or row[1] is None or row[0] not in spaces:
                continue
            kids = []
            for op, order in (("<", "DESC"), (">", "ASC")):
                found = conn.execute(
                    "SELECT seq FROM memories WHERE space = ? AND session_id = ? AND state = 'active' "
                    f"AND seq {op} ? ORDER BY seq {order} LIMIT 1",
                    (row[0], row[1], int(seq)),
                ).fetchone()
                if found is not None:
                    kids.append(int(found[0]))
            out[int(seq)] = kids
    return out


STORE_METHODS = {"neighbours": store_neighbours}


_SOURCE: list[str] = []


def _search_source() -> str:
    """Source of the loaded ``EmbeddedBackend.search``, read once per process.

    Read once because ``inspect`` reads the file on disk: if core/engine.py changes
    during a long run, a later read would no longer match the code in memory.
    """
    if not _SOURCE:
        from bli_memory.core import engine

        source = textwrap.dedent(inspect.getsource(engine.EmbeddedBackend.search))
        if not source.startswith("def search("):
            raise RuntimeError("core/engine.py changed on disk since it was imported; run again")
        _SOURCE.append(source)
    return _SOURCE[0]


def patched_backend_class(patches: Sequence[str], index_for: Any = None) -> type:
    """An ``EmbeddedBackend`` subclass whose search carries the named patches.

    Args:
        patches: Names from :data:`ENGINE_PATCHES`.
        index_for: For ``hnsw``: callable ``(spaces, vector_set) -> VectorIndex | None``.

    Raises:
        RuntimeError: the engine's source no longer matches a patch.
    """
    from bli_memory.core import engine, store

    base = engine.EmbeddedBackend
    source = _search_source()
    for name in patches:
        if _MARKERS[name] in source:
            continue  # the engine has it already
        for old, new in ENGINE_PATCHES[name]:
            # Written at their indentation in engine.py; the dedented method sits 4 to the left.
            old_block = textwrap.indent(textwrap.dedent(old), " " * (len(old) - len(old.lstrip()) - 4))
            new_block = textwrap.indent(textwrap.dedent(new), " " * (len(new) - len(new.lstrip()) - 4))
            if old_block not in source:
                raise RuntimeError(f"core/engine.py changed: the {name} patch no longer applies")
            source = source.replace(old_block, new_block)
    for method, fn in STORE_METHODS.items():
        if not hasattr(store.SQLiteStore, method):
            setattr(store.SQLiteStore, method, fn)
    namespace: dict[str, Any] = {}
    exec(compile(source, "<engine.search + proposed patches>", "exec"), vars(engine), namespace)  # noqa: S102

    attrs: dict[str, Any] = {"search": namespace["search"]}
    if not hasattr(base, "_context_bonus"):
        attrs["_context_bonus"] = context_bonus
    if index_for is not None or not hasattr(base, "_vector_index"):
        attrs["_vector_index"] = lambda self, spaces, vs: index_for(spaces, vs) if index_for else None
    return type("PatchedBackend", (base,), attrs)
