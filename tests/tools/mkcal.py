#!/usr/bin/env python3
"""mkcal.py DIR COUNT DTYPE SHAPE...: write COUNT .npy files DIR/s0000.npy ...
of the given shape, for calibration: DTYPE f4 gives floats in [0, 1), i8 gives
int64 token ids in [0, 512). Seeded by $SEED (default 1). Plain python3, no
NumPy, so the tests need nothing beyond the standard library."""
import os
import random
import struct
import sys

d, n, dt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
shape = [int(s) for s in sys.argv[4:]]
random.seed(int(os.environ.get("SEED", "1")))
os.makedirs(d, exist_ok=True)
cnt = 1
for s in shape:
    cnt *= s
for i in range(n):
    hdr = "{'descr': '<%s', 'fortran_order': False, 'shape': (%s), }" % (
        dt, "".join("%d, " % s for s in shape))
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    with open(os.path.join(d, "s%04d.npy" % i), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        if dt == "f4":
            f.write(struct.pack("<%df" % cnt, *[random.random() for _ in range(cnt)]))
        else:
            f.write(struct.pack("<%dq" % cnt, *[random.randrange(512) for _ in range(cnt)]))
