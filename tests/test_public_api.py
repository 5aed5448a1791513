"""Every public module declares its API in a sorted, complete ``__all__`` (as httpx does)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import bli_memory.adapters
import bli_memory.core
import bli_memory.installers

MODULES = sorted(
    info.name
    for pkg in (bli_memory.core, bli_memory.adapters, bli_memory.installers)
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
    if not info.name.rsplit(".", 1)[1].startswith("_") and not info.ispkg
    and ".postgres.migrations" not in info.name
)


def _isort_key(name: str) -> tuple[int, str]:
    """ruff RUF022 order: CONSTANTS, then Classes, then everything else, each alphabetical."""
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_complete_and_real(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, f"{name} has no module docstring"
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert list(exported) == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr}"
    if name.startswith("bli_memory.adapters."):
        return  # an adapter is a plugin: its hookimpls are found by pluggy, not imported
    defined = {
        n for n, obj in vars(module).items()
        if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
        and getattr(obj, "__module__", None) == name
        and not hasattr(obj, "bli_memory_spec")  # hook specifications are found by pluggy
        and not re.match(r"^m\d{3}_", n)  # migrations are registered in MIGRATIONS
    }
    missing = defined - set(exported)
    assert not missing, f"{name}: public names missing from __all__: {sorted(missing)}"
