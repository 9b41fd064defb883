#!/usr/bin/env python3
"""st_check: an independent safetensors reader (Python standard library only).

Checks a safetensors file the way the reference reader does and prints one
line per tensor, in data order:

    NAME DTYPE [D0,D1,...] crc32=XXXXXXXX

--consts prints instead the names of the graph's constants, read from the TG
graph JSON in __metadata__["tgraph"] (one per line, in graph order), so a test
can compare the two lists. --meta KEY prints one metadata string.

Exit status: 0 valid, 1 invalid ("st_check: FILE: what"), 2 bad usage.
"""
import json
import struct
import sys
import zlib

HEADER_MAX = 100_000_000
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
         "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}


class Invalid(Exception):
    pass


def no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise Invalid(f"header: key {k!r} appears twice")
        obj[k] = v
    return obj


def is_uint(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def parse(data):
    """(metadata dict or None, [(name, dtype, shape, begin, end)] in data order, data)."""
    if len(data) < 8:
        raise Invalid("shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > HEADER_MAX:
        raise Invalid(f"header length {n} exceeds {HEADER_MAX}")
    if 8 + n > len(data):
        raise Invalid(f"header length {n} runs past the end of the file")
    try:
        text = data[8:8 + n].decode("utf-8")
        header = json.loads(text, object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, ValueError) as e:
        raise Invalid(f"header: {e}")
    if not isinstance(header, dict):
        raise Invalid("header: not a JSON object")
    meta = header.pop("__metadata__", None)
    if meta is not None:
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            raise Invalid("header: __metadata__ must map strings to strings")
    tensors = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise Invalid(f"tensor {name!r}: needs exactly dtype, shape, data_offsets")
        dtype, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in SIZES:
            raise Invalid(f"tensor {name!r}: unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(is_uint(d) for d in shape):
            raise Invalid(f"tensor {name!r}: bad shape {shape!r}")
        if not (isinstance(offs, list) and len(offs) == 2 and all(is_uint(o) for o in offs)):
            raise Invalid(f"tensor {name!r}: bad data_offsets {offs!r}")
        numel = 1
        for d in shape:
            numel *= d
        begin, end = offs
        if end < begin or end - begin != numel * SIZES[dtype]:
            raise Invalid(f"tensor {name!r}: data_offsets {offs} do not hold "
                          f"{numel} x {dtype}")
        tensors.append((name, dtype, shape, begin, end))
    tensors.sort(key=lambda t: (t[3], t[4]))
    body = data[8 + n:]
    pos = 0
    for name, _, _, begin, end in tensors:
        if begin != pos:
            raise Invalid(f"tensor {name!r}: starts at {begin}, expected {pos} "
                          "(a hole or an overlap)")
        pos = end
    if pos != len(body):
        raise Invalid(f"the tensors cover {pos} bytes but the data is {len(body)}")
    return meta, tensors, body


def main(argv):
    args = argv[1:]
    mode, key = "tensors", None
    if args and args[0] == "--consts":
        mode, args = "consts", args[1:]
    elif len(args) >= 2 and args[0] == "--meta":
        mode, key, args = "meta", args[1], args[2:]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: st_check.py [--consts | --meta KEY] FILE", file=sys.stderr)
        return 2
    path = args[0]
    try:
        with (open(path, "rb") if path != "-" else sys.stdin.buffer) as f:
            data = f.read()
        meta, tensors, body = parse(data)
        if mode == "meta":
            if meta is None or key not in meta:
                raise Invalid(f"no metadata key {key!r}")
            print(meta[key])
        elif mode == "consts":
            if meta is None or "tgraph" not in meta:
                raise Invalid("no TG graph in __metadata__")
            graph = json.loads(meta["tgraph"], object_pairs_hook=no_duplicates)
            for v in graph["values"]:
                if v["kind"] == "const":
                    print(v["name"])
        else:
            for name, dtype, shape, begin, end in tensors:
                crc = zlib.crc32(body[begin:end]) & 0xFFFFFFFF
                dims = ",".join(str(d) for d in shape)
                print(f"{name} {dtype} [{dims}] crc32={crc:08x}")
    except (OSError, Invalid, ValueError, KeyError, TypeError) as e:
        print(f"st_check: {path}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
