#!/usr/bin/python3
"""Converts the 8x8 handwritten digits that Debian's python3-sklearn ships into data/digits.u8.

    apt-get install python3-sklearn && /usr/bin/python3 data/make_digits.py

Output: 1797 records of 65 bytes: 64 pixel intensities (0..16, row-major 8x8) then the label.
The source is UCI's "Optical Recognition of Handwritten Digits" test set, as bundled by scikit-learn.
"""
import gzip
import os

SRC = '/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz'
rows = [line.strip().split(',') for line in gzip.open(SRC, 'rt') if line.strip()]
out = bytearray()
for r in rows:
    vals = [int(float(v)) for v in r]
    assert len(vals) == 65 and all(0 <= v <= 16 for v in vals[:64]) and 0 <= vals[64] <= 9
    out.extend(vals)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'digits.u8')
with open(path, 'wb') as f:
    f.write(out)
print(f'wrote {len(rows)} digits to {path}')
