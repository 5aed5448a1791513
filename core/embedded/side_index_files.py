"""Side indexes saved beside the store, so a restart loads them instead of rebuilding.

An HNSW index over 1M rows takes about 150 s to build on 2 cores and under a second
to load (``docs/benchmarks.md``). :class:`SideIndexFiles` keeps each saved index in the
folder ``<store file>.indexes/`` (0700; files 0600) as two files:

- ``vector-<key>-<write_seq>-<token>.usearch``: the index, written to a temporary
  name and renamed into place, so a kill mid-save leaves the old file or the new one;
- ``vector-<key>.json``: what it was saved from (format, spaces, embedding model,
  dimensions, index parameters, the store's ``store_id``, ``side_index_epoch`` and
  write sequence, row count, file size), replaced atomically after the index file is
  in place, and naming that file.

A saved index is only a head start: it is loaded only when every recorded field
matches the open store and the file has the recorded size and count, then caught up
from its write sequence with the rows that moved since
(:meth:`~bli_memory.core.embedded.vector_cache.VectorCache.changes`), and dropped for
a rebuild when the caught-up count differs from the live count. Two processes saving
the same index each name their own file, and the record names one of them whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bli_memory.core.errors import StoreError
from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

__all__ = ["FORMAT", "SideIndexFiles", "index_folder"]

_log = logging.getLogger("bli_memory.side_indexes")

#: Version of the record's layout; another value is never loaded.
FORMAT = 1


def index_folder(store_path: Path) -> Path:
    """The folder of the saved side indexes of the store at ``store_path``."""
    return store_path.with_name(store_path.name + ".indexes")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


class SideIndexFiles:
    """Save and load the side indexes (and the vector matrix) of one store.

    Args:
        store_path: The store file; indexes go to :func:`index_folder` of it.
    """

    def __init__(self, store_path: Path) -> None:
        self.folder = index_folder(Path(store_path))

    @staticmethod
    def _stem(kind: str, spaces: Sequence[str]) -> str:
        key = hashlib.sha256(",".join(sorted(spaces)).encode("utf-8")).hexdigest()[:16]
        return f"{kind}-{key}"

    def record_path(self, kind: str, spaces: Sequence[str]) -> Path:
        """Where the record of the saved ``kind`` index of ``spaces`` lives."""
        return self.folder / f"{self._stem(kind, spaces)}.json"

    def save_vector(self, index: Any, spaces: Sequence[str], identity: dict[str, Any]) -> Path:
        """Save a :class:`~bli_memory.core.embedded.vector_index.VectorIndex` atomically.

        Args:
            index: The index; its ``mark`` (``(epoch, write_seq)``) is recorded.
            spaces: The spaces it covers.
            identity: ``store_id``, ``model``, ``dimensions`` and ``params`` of the index.

        Returns:
            The index file written.

        Raises:
            StoreError: the folder or a file could not be written (nothing is replaced).
        """
        assert index.mark is not None
        epoch, write_seq = index.mark
        stem = self._stem("vector", spaces)
        name = f"{stem}-{write_seq}-{os.urandom(4).hex()}.usearch"
        tmp = self.folder / f".{stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            make_private_dir(self.folder)
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
            index.save(str(tmp))
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fchmod(fd, FILE_MODE)
                os.fsync(fd)
            finally:
                os.close(fd)
            size = tmp.stat().st_size
            os.replace(tmp, self.folder / name)
            record = {
                "format": FORMAT, "kind": "vector", "spaces": sorted(spaces), **identity,
                "epoch": epoch, "write_seq": write_seq, "count": len(index), "file": name, "bytes": size,
            }
            atomic_write(self.record_path("vector", spaces), json.dumps(record, sort_keys=True))
        except (OSError, StoreError) as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(f"cannot save the vector side index: {exc}") from exc
        self._sweep(stem, keep=name)
        return self.folder / name

    def _sweep(self, stem: str, *, keep: str | tuple[str, ...]) -> None:
        """Remove what the record of ``stem`` no longer names, and temporary files and
        working folders left by processes that died."""
        kept = (keep,) if isinstance(keep, str) else keep
        with contextlib.suppress(OSError):
            for path in self.folder.iterdir():
                name = path.name
                if name.startswith(f"{stem}-") and name not in kept:
                    _remove(path)
                elif name.startswith(f".{stem}.") and name.endswith((".tmp", ".work")):
                    parts = name.split(".")  # .<stem>[.json].<pid>.<random>.tmp|work
                    if len(parts) > 4 and parts[-3].isdigit() and not _alive(int(parts[-3])):
                        _remove(path)

    def save_matrix(self, vs: Any, spaces: Sequence[str], identity: dict[str, Any]) -> Path:
        """Save the live rows of a :class:`~bli_memory.core.embedded.vector_codec.VectorSet`.

        Written as ``matrix-<key>-<write_seq>-<token>.f32`` (raw little-endian float32,
        ``capacity`` rows of which the first ``count`` are filled: the spare rows are a
        sparse tail, no disk blocks) and ``.seqs`` (int64), then a record naming them, as
        for the vector index. A row tombstoned while the file is written may be in it;
        the catch-up after loading tombstones it again.

        Raises:
            StoreError: nothing was replaced.
        """
        import numpy as np

        stem = self._stem("matrix", spaces)
        token = f"{vs.write_seq}-{os.urandom(4).hex()}"
        names = (f"{stem}-{token}.f32", f"{stem}-{token}.seqs")
        keep = np.flatnonzero(vs.alive) if vs.alive is not None else None
        n = vs.size
        capacity = n + max(1024, n // 8)
        tmps: list[Path] = []
        try:
            make_private_dir(self.folder)
            for write in ("matrix", "seqs"):
                tmp = self.folder / f".{stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
                tmps.append(tmp)
                with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "wb") as out:
                    if write == "seqs":
                        out.write(np.ascontiguousarray(vs.live_seqs(), dtype="<i8").tobytes())
                    else:
                        for lo in range(0, len(vs.seqs), 50_000):
                            part = vs.matrix[lo : lo + 50_000]
                            if keep is not None:
                                part = part[vs.alive[lo : lo + 50_000]]
                            out.write(np.ascontiguousarray(part, dtype="<f4").tobytes())
                        out.truncate(capacity * vs.matrix.shape[1] * 4)
                    out.flush()
                    os.fsync(out.fileno())
            for tmp, name in zip(tmps, names, strict=True):
                os.replace(tmp, self.folder / name)
            record = {
                "format": FORMAT, "kind": "matrix", "spaces": sorted(spaces), **identity,
                "epoch": vs.epoch, "write_seq": vs.write_seq, "count": n, "capacity": capacity,
                "file": names[0], "seqs_file": names[1],
                "bytes": (self.folder / names[0]).stat().st_size,
            }
            atomic_write(self.record_path("matrix", spaces), json.dumps(record, sort_keys=True))
        except OSError as exc:
            for tmp in tmps:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            raise StoreError(f"cannot save the vector matrix: {exc}") from exc
        self._sweep(stem, keep=names)
        return self.folder / names[0]

    def load_matrix(self, spaces: Sequence[str], identity: dict[str, Any], *, write_seq: int,
                    epoch: int) -> tuple[Any, Any, int, int] | None:
        """The saved live vectors of ``spaces`` when the record matches, else None.

        Returns:
            ``(seqs, matrix, count, write_seq)``: int64 seqs with spare capacity, the
            float32 matrix mapped copy-on-write from the file (pages are read as rows are
            touched; writes stay in this process), the rows filled, and the write sequence
            to catch up from.
        """
        import numpy as np

        record = self._record("matrix", spaces, identity, write_seq=write_seq, epoch=epoch)
        if record is None:
            return None
        try:
            n, capacity, d = int(record["count"]), int(record["capacity"]), int(identity["dimensions"])
            if record.get("bytes") != capacity * d * 4 or n > capacity:
                raise ValueError("size")
            raw = np.fromfile(self.folder / str(record["seqs_file"]), dtype="<i8")
            if len(raw) != n or (n > 1 and not bool(np.all(raw[1:] > raw[:-1]))):
                raise ValueError("seqs")
            seqs = np.empty(capacity, dtype=np.int64)
            seqs[:n] = raw
            matrix = np.memmap(self.folder / str(record["file"]), dtype="<f4", mode="c", shape=(capacity, d))
        except (OSError, ValueError, KeyError) as exc:
            _log.warning("saved vector matrix ignored (%s); reading the table", exc)
            return None
        return seqs, matrix, n, int(record["write_seq"])

    def _record(self, kind: str, spaces: Sequence[str], identity: dict[str, Any], *, write_seq: int,
                epoch: int) -> dict[str, Any] | None:
        """The record of the saved ``kind`` of ``spaces`` when every check passes, else None."""
        path = self.record_path(kind, spaces)
        try:
            record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            _log.warning("saved %s ignored (unreadable record: %s)", kind, exc)
            return None
        want = {"format": FORMAT, "kind": kind, "spaces": sorted(spaces), "epoch": epoch, **identity}
        wrong = sorted(k for k, v in want.items() if record.get(k) != v)
        if not wrong and not (isinstance(record.get("write_seq"), int) and record["write_seq"] <= write_seq):
            wrong = ["write_seq"]
        file = self.folder / str(record.get("file", ""))
        if not wrong and (file.parent != self.folder or not file.exists() or (
                kind != "keyword" and (not file.is_file() or file.stat().st_size != record.get("bytes")))):
            wrong = ["file"]
        if wrong:
            _log.warning("saved %s ignored (%s changed); rebuilding", kind, ", ".join(wrong))
            return None
        return record

    def save_keyword(self, seqs: Sequence[int], mark: tuple[int, int], spaces: Sequence[str],
                     identity: dict[str, Any], fetch: Any, *, threads: int = 1) -> Path:
        """Write a keyword index of ``seqs`` to a folder of its own, atomically.

        Tantivy cannot write an index held in memory to disk, so the saved copy is built
        from the table's term strings (``fetch``: ``(seqs) -> [(seq, terms), ...]``), in a
        temporary folder renamed into place, with the list of seqs it holds; rows gone
        since ``mark`` are simply absent, and the catch-up after loading removes them
        anyway.

        Raises:
            StoreError: nothing was replaced.
        """
        import shutil

        import numpy as np

        from bli_memory.core.embedded.keyword_index import KeywordIndex

        stem = self._stem("keyword", spaces)
        name = f"{stem}-{mark[1]}-{os.urandom(4).hex()}"
        tmp = self.folder / f".{stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            make_private_dir(self.folder)
            os.mkdir(tmp, 0o700)
            disk = KeywordIndex(threads=threads, path=str(tmp))
            for lo in range(0, len(seqs), 50_000):
                disk.add(fetch(list(seqs[lo : lo + 50_000])))
            disk.commit()
            held = np.asarray(disk.seqs(), dtype="<i8")
            (tmp / "seqs").write_bytes(held.tobytes())
            for path in tmp.iterdir():
                os.chmod(path, FILE_MODE)
            del disk
            os.replace(tmp, self.folder / name)
            record = {"format": FORMAT, "kind": "keyword", "spaces": sorted(spaces), **identity,
                      "epoch": mark[0], "write_seq": mark[1], "count": len(held), "file": name}
            atomic_write(self.record_path("keyword", spaces), json.dumps(record, sort_keys=True))
        except (OSError, StoreError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise StoreError(f"cannot save the keyword side index: {exc}") from exc
        self._sweep(stem, keep=name)
        return self.folder / name

    def load_keyword(self, spaces: Sequence[str], identity: dict[str, Any], *, write_seq: int,
                     epoch: int, threads: int = 1) -> Any:
        """The saved keyword index of ``spaces``, read in place, when its record matches;
        else None (as :meth:`load_vector`).

        Nothing is copied until the index must change: before its first write it is
        copied to a working folder of this process (``.<stem>.<pid>.<random>.work``,
        :attr:`~bli_memory.core.embedded.keyword_index.KeywordIndex.detach`), which is
        removed by :meth:`discard` or, after the process died, by the next save's sweep.
        The saved folder itself is never written: it may be read by other processes, and
        a newer save replaces it by renaming (the segments a searcher opened stay readable).
        """
        import shutil

        import numpy as np

        from bli_memory.core.embedded.keyword_index import KeywordIndex

        record = self._record("keyword", spaces, identity, write_seq=write_seq, epoch=epoch)
        if record is None:
            return None
        stem = self._stem("keyword", spaces)
        self._sweep(stem, keep=str(record["file"]))  # copies left by processes that died
        saved = self.folder / str(record["file"])
        try:
            seqs = np.fromfile(saved / "seqs", dtype="<i8")
            index = KeywordIndex(threads=threads, path=str(saved))
            if len(seqs) != record.get("count") or index.num_docs() != len(seqs):
                raise StoreError("count changed")
        except (OSError, ValueError, StoreError) as exc:
            _log.warning("saved keyword side index ignored (%s); rebuilding", exc)
            return None

        def detach() -> str:
            work = self.folder / f".{stem}.{os.getpid()}.{os.urandom(4).hex()}.work"
            try:
                shutil.copytree(saved, work)
                os.chmod(work, 0o700)
            except OSError as exc:
                shutil.rmtree(work, ignore_errors=True)
                raise StoreError(f"cannot copy the saved keyword side index: {exc}") from exc
            index.work = work
            return str(work)

        index.adopt(seqs)
        index.detach = detach
        index.mark = (int(record["epoch"]), int(record["write_seq"]))
        return index

    @staticmethod
    def discard(index: Any) -> None:
        """Remove the working folder of a keyword index opened by :meth:`load_keyword`."""
        import shutil

        work = getattr(index, "work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)

    def load_vector(self, spaces: Sequence[str], identity: dict[str, Any], *, write_seq: int,
                    epoch: int, threads: int = 1) -> Any:
        """The saved vector index of ``spaces`` when its record matches, else None.

        Args:
            spaces: The spaces searched.
            identity: As for :meth:`save_vector`; every field must equal the record's.
            write_seq: The store's write sequence now (a record ahead of it is another
                store's or a restored file's, and is not loaded).
            epoch: The store's ``side_index_epoch`` now.
            threads: Threads the loaded index may use for adds.

        Returns:
            A :class:`~bli_memory.core.embedded.vector_index.VectorIndex` mapping the file
            (:meth:`~bli_memory.core.embedded.vector_index.VectorIndex.view`: nothing is read
            but the pages searches visit) with ``mark`` set to the recorded
            ``(epoch, write_seq)``: catch it up before use. None when there is no record,
            or any check fails (one line is logged for a failed check).
        """
        from bli_memory.core.embedded.vector_index import VectorIndex

        record = self._record("vector", spaces, identity, write_seq=write_seq, epoch=epoch)
        if record is None:
            return None
        file = self.folder / str(record["file"])
        params = identity.get("params", {})
        try:
            index = VectorIndex(int(identity["dimensions"]), threads=threads, **params)
            index.view(str(file))
        except StoreError as exc:
            _log.warning("saved vector side index ignored (%s); rebuilding", exc)
            return None
        if len(index) != record.get("count"):
            _log.warning("saved vector side index ignored (count changed); rebuilding")
            return None
        index.mark = (int(record["epoch"]), int(record["write_seq"]))
        return index
