"""safetensors -- read and write the safetensors layout autotm's --weights-in, --data and
--weights-out use (docs/formats.md), with the standard library and torch only.

    write(path, {"conv1.weight": tensor, ...})   atomically: a temporary file renamed
    read(path) -> {"conv1.weight": tensor, ...}   every offset checked
"""

import json
import struct

import torch

from .files import write_atomic

DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}
BY_NAME = {v: k for k, v in DTYPES.items()}


class SafetensorsError(ValueError):
    """a file that is not a safetensors file, named with what is wrong"""


def dumps(tensors, metadata=None):
    """dumps -- the file's bytes for {name: tensor}, in the dict's order, the header padded so
    that the tensors start 8-byte aligned"""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        if t.dtype not in DTYPES:
            raise SafetensorsError(f"tensor '{name}': dtype {t.dtype} has no safetensors name")
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write(path, tensors, metadata=None):
    """write -- dumps(tensors) to path atomically: an interrupted write leaves the old file"""
    write_atomic(path, dumps(tensors, metadata or {"format": "pt"}))


def read(path):
    """read -- {name: tensor} of a safetensors file, in the order of their bytes"""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise SafetensorsError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise SafetensorsError(f"{path}: the header length {n} runs past the end of the file")
    try:
        header = json.loads(data[8:8 + n])
    except ValueError as e:
        raise SafetensorsError(f"{path}: header: {e}") from None
    body = data[8 + n:]
    out = {}
    for name, e in sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                          key=lambda kv: kv[1]["data_offsets"][0]):
        b, end = e["data_offsets"]
        if e["dtype"] not in BY_NAME or not 0 <= b <= end <= len(body):
            raise SafetensorsError(f"{path}: tensor '{name}': bad dtype or offsets")
        dtype = BY_NAME[e["dtype"]]
        raw = bytearray(body[b:end])
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(e["shape"]).clone()
    return out
