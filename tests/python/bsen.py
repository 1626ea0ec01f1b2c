"""bsen -- the sentence-embedding goldens (tests/golden/*.bsen) for the Python tests.

The format is documented in docs/testing.md ("Sentence-embedding goldens")
and read in C by tests/support/sentences.c; this is an independent reader:
    "BSEN" u32 version=1, u32 header_len, header (UTF-8 "key: value" lines), u32 ncases,
    per case: u32 text_len, text; u32 n_ids, i32 ids[n_ids]; u32 dim, f32 mean_pooled[dim], f32 embedding[dim]
Little-endian; nothing after the last case.
"""
import struct

import numpy as np


class Case:
    def __init__(self, text, ids, mean_pooled, embedding):
        self.text, self.ids, self.mean_pooled, self.embedding = text, ids, mean_pooled, embedding


def load(path):
    """(header dict, [Case]); raises ValueError on a damaged file."""
    data = open(path, "rb").read()
    at = 0

    def take(n, what):
        nonlocal at
        if n > len(data) - at:
            raise ValueError("%s: offset %d: truncated reading %s" % (path, at, what))
        at += n
        return data[at - n:at]

    def u32(what):
        return struct.unpack("<I", take(4, what))[0]

    if take(4, "magic") != b"BSEN" or u32("version") != 1:
        raise ValueError("%s: not a version 1 .bsen file" % path)
    header = {}
    for line in take(u32("header length"), "header").decode("utf-8").splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            header.setdefault(key, value)
    cases = []
    for i in range(u32("case count")):
        text = take(u32("text length"), "case %d text" % i).decode("utf-8")
        n = u32("id count")
        ids = np.frombuffer(take(4 * n, "case %d ids" % i), "<i4").astype(np.int32)
        dim = u32("dim")
        mean = np.frombuffer(take(4 * dim, "case %d mean_pooled" % i), "<f4").astype(np.float32)
        emb = np.frombuffer(take(4 * dim, "case %d embedding" % i), "<f4").astype(np.float32)
        cases.append(Case(text, ids, mean, emb))
    if at != len(data):
        raise ValueError("%s: %d bytes after the last case" % (path, len(data) - at))
    return header, cases
