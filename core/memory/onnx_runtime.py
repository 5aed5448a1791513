"""Importing ONNX Runtime without its telemetry.

ONNX Runtime's official wheels for Linux and macOS send usage telemetry since 1.32
(microsoft/onnxruntime pull request 27379): on import they write a persistent device
id and an offline event cache under ``~/.cache/Microsoft/DeveloperTools/.onnxruntime``
and start an uploader. A memory layer that promises to keep to itself does not do
that on the person's behalf. ``ORT_DISABLE_TELEMETRY=1``, set before the first import,
turns all of it off for the process (the same pull request); a person who wants it on
sets ``ORT_DISABLE_TELEMETRY=0`` themselves.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["import_onnxruntime"]


def import_onnxruntime() -> ModuleType:
    """``import onnxruntime``, with ``ORT_DISABLE_TELEMETRY`` defaulted to ``1`` first.

    Raises:
        ImportError: onnxruntime is not installed.
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import importlib

    return importlib.import_module("onnxruntime")
