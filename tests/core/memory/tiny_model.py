"""A second real embedding model for tests: a tiny ONNX graph, written without the onnx package.

The graph is a bag of token embeddings: ``Gather`` from a seeded random table
``[vocab, dims]`` by ``input_ids``, masked by ``attention_mask``, summed over the
sequence and L2-normalised (``LpNormalization``). onnxruntime runs it like any exported
model; it uses the shipped model's tokenizer, so texts sharing words get close vectors.
The ``ModelProto`` is encoded by hand from the field numbers of onnx/onnx.proto (IR
version 7, opset 11), which keeps the test suite free of the onnx package.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["write_tiny_model"]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _key(field, 2) + _varint(len(data)) + data


def _attr_int(name: str, value: int) -> bytes:  # AttributeProto: name 1, i 3, type 20 (INT = 2)
    return _bytes(1, name) + _int(3, value) + _int(20, 2)


def _attr_ints(name: str, values: list[int]) -> bytes:  # ints 8, type INTS = 7
    return _bytes(1, name) + b"".join(_int(8, v) for v in values) + _int(20, 7)


def _node(op: str, inputs: list[str], outputs: list[str], *attrs: bytes) -> bytes:
    # NodeProto: input 1, output 2, name 3, op_type 4, attribute 5
    body = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    body += _bytes(3, f"{op}_{outputs[0]}") + _bytes(4, op) + b"".join(_bytes(5, a) for a in attrs)
    return _bytes(1, body)


def _value_info(field: int, name: str, elem_type: int, dims: list[int | str]) -> bytes:
    # ValueInfoProto: name 1, type 2 -> TypeProto.tensor_type 1 -> elem_type 1, shape 2 -> dim 1
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    tensor = _int(1, elem_type) + _bytes(2, shape)
    return _bytes(field, _bytes(1, name) + _bytes(2, _bytes(1, tensor)))


def tiny_model_bytes(vocab: int, dims: int, seed: int = 7) -> bytes:
    """The serialised ONNX model (FLOAT = 1, INT64 = 7 in TensorProto.DataType)."""
    table = np.random.default_rng(seed).standard_normal((vocab, dims)).astype("<f4")
    # TensorProto: dims 1, data_type 2, name 8, raw_data 9
    initializer = b"".join(_int(1, d) for d in (vocab, dims)) + _int(2, 1) + _bytes(8, "table")
    initializer += _bytes(9, table.tobytes())
    nodes = (
        _node("Cast", ["attention_mask"], ["mask_f"], _attr_int("to", 1))
        + _node("Gather", ["table", "input_ids"], ["tokens"], _attr_int("axis", 0))
        + _node("Unsqueeze", ["mask_f"], ["mask3"], _attr_ints("axes", [2]))
        + _node("Mul", ["tokens", "mask3"], ["masked"])
        + _node("ReduceSum", ["masked"], ["summed"], _attr_ints("axes", [1]), _attr_int("keepdims", 0))
        + _node("LpNormalization", ["summed"], ["embedding"], _attr_int("axis", 1), _attr_int("p", 2))
    )
    # GraphProto: node 1, name 2, initializer 5, input 11, output 12
    graph = nodes + _bytes(2, "tiny") + _bytes(5, initializer)
    graph += _value_info(11, "input_ids", 7, ["batch", "sequence"])
    graph += _value_info(11, "attention_mask", 7, ["batch", "sequence"])
    graph += _value_info(12, "embedding", 1, ["batch", dims])
    # ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 (domain 1, version 2)
    opset = _bytes(8, _bytes(1, "") + _int(2, 11))
    return _int(1, 7) + _bytes(2, "bli-memory-tests") + _bytes(7, graph) + opset


def write_tiny_model(folder: Path, *, name: str = "tiny-bag-16", dims: int = 16) -> Path:
    """Write a complete model folder (model.onnx, tokenizer.json, model.json, SHA256SUMS)."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = (resources.files("bli_memory.core.model") / "tokenizer.json").read_bytes()
    vocab = len(json.loads(tokenizer)["model"]["vocab"])
    files = {
        "model.onnx": tiny_model_bytes(vocab, dims),
        "tokenizer.json": tokenizer,
        "model.json": json.dumps({"name": name, "dimensions": dims, "max_tokens": 128}).encode(),
    }
    for file_name, data in files.items():
        (folder / file_name).write_bytes(data)
    sums = "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in files.items())
    (folder / "SHA256SUMS").write_text(sums)
    return folder
