"""Offline noise texts for the hook section: docstrings of the standard library.

Every machine that runs the benchmark has CPython's standard library, so its docstrings
are unrelated text available offline, in two flavours the hook section needs:

- *memories*: the first paragraph of a module's, class's or function's docstring;
- *prompts*: the first line of such a docstring, as a person would type a request.

The modules are split into two disjoint groups by a stable hash of their top-level
package name (a package and its submodules always fall in the same group), so group A
and group B are two unrelated codebases of the same kind: the "near miss in code"
condition of the hook section. Sources are parsed with :mod:`ast`, never imported, so
no module's import side effects run. Standard library only.
"""

from __future__ import annotations

import ast
import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SUBJECTS", "Docstring", "split_groups", "stdlib_docstrings", "subject_groups"]

#: Folders of the standard library that are tests, demos or tool code, not library text.
_SKIP = frozenset(
    {
        "test",
        "tests",
        "idlelib",
        "lib2to3",
        "turtledemo",
        "site-packages",
        "ensurepip",
        "__pycache__",
        "tkinter",
        "pydoc_data",
        "distutils",
    }
)


@dataclass(frozen=True)
class Docstring:
    """One docstring: where it is, its first paragraph and its first line."""

    module: str
    group_key: str
    name: str
    paragraph: str
    first_line: str


def _first_paragraph(doc: str) -> str:
    para = doc.strip().split("\n\n", 1)[0]
    return " ".join(para.split())


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def stdlib_docstrings(*, min_chars: int = 40, max_chars: int = 600) -> list[Docstring]:
    """Docstrings of the standard library's modules and their top-level classes and functions.

    Args:
        min_chars: Drop paragraphs shorter than this (``"Helper."`` says nothing).
        max_chars: Drop paragraphs longer than this (tables, long prose).

    Returns:
        Docstrings in a stable order (module path, then source order); duplicates of
        the same paragraph are kept once.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    out: list[Docstring] = []
    seen: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part in _SKIP or part.startswith("_") and part != "__init__.py" for part in rel.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        module = _module_name(path, root)
        nodes: list[tuple[str, ast.AST]] = [(module, tree)]
        for node in tree.body:
            named = isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            if named and not node.name.startswith("_"):
                nodes.append((f"{module}.{node.name}", node))
        for name, node in nodes:
            doc = ast.get_docstring(node)  # type: ignore[arg-type]
            if not doc:
                continue
            para = _first_paragraph(doc)
            line = " ".join(doc.strip().splitlines()[0].split())
            if not (min_chars <= len(para) <= max_chars) or len(line) < 20 or para in seen:
                continue
            seen.add(para)
            out.append(Docstring(module, module.split(".")[0], name, para, line))
    return out


def split_groups(
    docs: list[Docstring], *, salt: str = "bli-hook-bench"
) -> tuple[list[Docstring], list[Docstring]]:
    """Two disjoint groups of modules (by a stable hash of the top-level package).

    Args:
        docs: From :func:`stdlib_docstrings`.
        salt: Changes the split (the calibration uses a different salt than the report).
    """
    a: list[Docstring] = []
    b: list[Docstring] = []
    for d in docs:
        h = hashlib.sha256(f"{salt}:{d.group_key}".encode()).digest()[0]
        (a if h % 2 == 0 else b).append(d)
    return a, b


#: Top-level standard-library packages by subject, following the chapters of the Python
#: Library Reference (https://docs.python.org/3/library/index.html), with related
#: chapters on one side so that the two groups are unrelated codebases of the same kind:
#: ``data`` holds text processing, binary data, data types, numeric, functional
#: programming, persistence, compression, file formats, cryptography, internet data
#: handling, structured markup, multimedia and internationalisation; ``system`` holds
#: file and directory access, operating-system services, concurrency, networking,
#: internet protocols, program frameworks, development and debugging tools, packaging,
#: the runtime, importing and the language services. A package not listed (a newer or
#: older Python's) is left out of both groups.
SUBJECTS: dict[str, str] = {
    **dict.fromkeys(
        "re string stringprep difflib textwrap codecs encodings calendar datetime collections "
        "heapq bisect weakref types copy pprint reprlib enum graphlib numbers fractions random "
        "statistics functools operator pickle copyreg shelve dbm sqlite3 pickletools bz2 gzip "
        "lzma zipfile tarfile csv configparser netrc plistlib hashlib hmac secrets crypt email "
        "json mailbox mimetypes base64 quopri uu mailcap xdrlib html xml colorsys imghdr sndhdr "
        "sunau aifc wave chunk audioop gettext locale unicodedata array decimal itertools "
        "zoneinfo tomllib binascii struct".split(),
        "data",
    ),
    **dict.fromkeys(
        "pathlib genericpath posixpath ntpath os stat filecmp tempfile glob fnmatch linecache "
        "shutil fileinput io argparse optparse getopt logging getpass curses platform ctypes pty "
        "threading multiprocessing concurrent subprocess sched queue asyncio asynchat asyncore "
        "socket ssl selectors webbrowser wsgiref urllib nturl2path http ftplib poplib imaplib "
        "nntplib smtplib smtpd uuid socketserver xmlrpc ipaddress cgi cgitb turtle cmd shlex "
        "typing pydoc doctest unittest bdb cProfile profile pstats pdb timeit trace tracemalloc "
        "venv zipapp sysconfig warnings dataclasses contextlib abc traceback inspect site "
        "antigravity code codeop zipimport pkgutil modulefinder runpy importlib imp ast symtable "
        "tokenize tabnanny pyclbr py_compile compileall dis opcode token keyword contextvars "
        "signal mmap select telnetlib pipes tty termios".split(),
        "system",
    ),
}


def subject_groups(docs: list[Docstring]) -> tuple[list[Docstring], list[Docstring]]:
    """Two groups of unrelated subjects (:data:`SUBJECTS`): ``(data, system)``.

    Unlike :func:`split_groups`, whose hash puts ``base64`` and ``binascii``, or
    ``asyncio`` and ``contextlib``, on opposite sides (so the other group often holds
    text on the prompt's very subject), related modules stay together here.
    Docstrings of packages :data:`SUBJECTS` does not list are left out.
    """
    data = [d for d in docs if SUBJECTS.get(d.group_key) == "data"]
    system = [d for d in docs if SUBJECTS.get(d.group_key) == "system"]
    return data, system
