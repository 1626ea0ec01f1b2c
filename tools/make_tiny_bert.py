#!/usr/bin/env python3
"""make_tiny_bert — write a small, random, Hugging Face style BERT checkpoint.

Usage:  python3 tools/make_tiny_bert.py --variant NAME OUT_DIR
        python3 tools/make_tiny_bert.py --list

Design.  The test suite needs BERT checkpoints that are small enough to
commit goldens for, yet exercise every way a real checkpoint can differ:
key prefixes (`bert.`), legacy LayerNorm names (`gamma`/`beta`), extra
tensors an importer has to skip, storage dtypes (F32/F16/BF16), activations,
layer-norm epsilons, type vocabularies and the presence of a pooler.  Each
variant below pins one combination.  The checkpoint is produced by this
script rather than committed, so the repository stays small; the goldens
made from it record the sha256 of model.safetensors and tests/cli/fixtures.sh
regenerates the file and compares, so the two cannot drift apart.

That only works if the output is the same bytes on every run and on every
Python 3.  Hence: no `random` module (its algorithms are version dependent),
no transcendental functions (libm results may differ in the last bit between
platforms).  Every value comes from a splitmix64 integer stream seeded with an
FNV-1a hash of "variant/tensor name", so tensors do not depend on each
other's order.  A normal-ish deviate is an Irwin-Hall sum of eight 16-bit
uniforms (pure integer arithmetic, then one exact division and IEEE
multiplies, which are correctly rounded everywhere).  Values are made in
float64 and rounded to the storage dtype here, by frexp/ldexp and Python's
round-half-even `round`, so the final struct.pack is always exact.  JSON is
written with sorted keys; safetensors data is laid out in key order (larger
item sizes first, as the safetensors library does) and the header is padded
with spaces to a multiple of 8.  Files are written under temporary names and
renamed, model.safetensors last, since the Makefile uses it as the stamp.

Weights are deliberately not "initialiser-small": query/key matrices have a
large spread so the softmax is peaky and a masking bug changes the output a
lot; embeddings have std 0.5; LayerNorm gamma is 1 +- 0.2.

Standard library only: CI runs this with a plain python3.
"""

import json
import math
import os
import struct
import sys

MASK64 = (1 << 64) - 1

# ---------------------------------------------------------------- variants

VARIANTS = {
    # The fuzz targets' fixture (tests/fuzz/): as small as a model can be, so a
    # plan of it is a few KiB and each fuzzing run is cheap.
    "micro-bert": dict(
        hidden=16, heads=2, layers=1, intermediate=24, vocab=120,
        max_pos=16, type_vocab=2, act="gelu", eps=1e-12,
        prefix="", legacy_ln=False, pooler=False, dtype="F32",
        vocab_txt=True, tokenizer_config=True,
        architectures=["BertModel"], extras=None),
    "tiny-bert": dict(
        hidden=96, heads=6, layers=3, intermediate=200, vocab=1000,
        max_pos=64, type_vocab=2, act="gelu", eps=1e-12,
        prefix="", legacy_ln=False, pooler=True, dtype="F32",
        vocab_txt=True, tokenizer_config=True,
        architectures=["BertModel"], extras=None),
    "tiny-bert-prefixed": dict(
        hidden=96, heads=6, layers=3, intermediate=200, vocab=1000,
        max_pos=40, type_vocab=2, act="gelu_new", eps=1e-7,
        prefix="bert.", legacy_ln=True, pooler=True, dtype="F16",
        vocab_txt=True, tokenizer_config=False,
        architectures=["BertForPreTraining"], extras="pretraining"),
    "tiny-bert-relu": dict(
        hidden=64, heads=4, layers=2, intermediate=120, vocab=500,
        max_pos=48, type_vocab=1, act="relu", eps=1e-5,
        prefix="", legacy_ln=False, pooler=False, dtype="BF16",
        vocab_txt=True, tokenizer_config=False,
        architectures=["BertModel"], extras=None),
    "tiny-bert-tanh": dict(
        hidden=80, heads=4, layers=2, intermediate=160, vocab=700,
        max_pos=32, type_vocab=3, act="gelu_pytorch_tanh", eps=1e-12,
        prefix="bert.", legacy_ln=False, pooler=True, dtype="F32",
        vocab_txt=False, tokenizer_config=False,
        architectures=["BertForSequenceClassification"],
        extras="classifier"),
}

# ---------------------------------------------------------------- randomness


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & MASK64
    return h


class SplitMix64:
    """splitmix64 (Steele, Lea, Flood 2014); integer only, so portable."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        """Uniform integer in [0, n) (rejection sampling, no modulo bias)."""
        if n <= 0:
            raise ValueError("below(n) needs n > 0")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n

    def uniform_pm1(self):
        """Uniform in [-1, 1): 53 random bits, exact in float64."""
        return (self.next_u64() >> 11) / float(1 << 52) - 1.0

    def normalish(self):
        """Irwin-Hall of eight 16-bit uniforms: mean 0, std ~1, |z| < 4.9."""
        a = self.next_u64()
        b = self.next_u64()
        s = 0
        for w in (a, b):
            for k in range(4):
                s += (w >> (16 * k)) & 0xFFFF
        # each term has variance (65536^2 - 1) / 12; use 65536^2 / 12.
        centred = s - 8 * 65535 / 2.0          # exact: a multiple of 0.5
        return centred / (65536.0 * SQRT_8_OVER_12)


SQRT_8_OVER_12 = math.sqrt(8.0 / 12.0)   # sqrt is correctly rounded (IEEE)

# ---------------------------------------------------------------- rounding

# (significand bits including the implicit one, smallest quantum exponent,
#  largest finite value)
DTYPE_INFO = {
    "F32": (24, -149, 3.4028234663852886e38, "<f", 4),
    "F16": (11, -24, 65504.0, "<e", 2),
    "BF16": (8, -133, 3.3895313892515355e38, None, 2),
}


def round_to(x, dtype):
    """Round float64 x to the nearest value of dtype (ties to even)."""
    bits, qmin, fmax, _, _ = DTYPE_INFO[dtype]
    if x == 0.0:
        return 0.0
    _, e = math.frexp(x)                 # |x| = m * 2^e, 0.5 <= m < 1
    q = max(e - bits, qmin)              # exponent of one unit in the last place
    r = round(math.ldexp(x, -q))         # exact scaling; round half to even
    y = math.ldexp(float(r), q)
    if abs(y) > fmax:
        raise ValueError("value %r overflows %s" % (x, dtype))
    return y


def pack_values(values, dtype):
    """Bytes of `values` (already representable) in little-endian dtype."""
    _, _, _, fmt, _ = DTYPE_INFO[dtype]
    if dtype == "BF16":
        out = bytearray()
        for v in values:
            (u,) = struct.unpack("<I", struct.pack("<f", v))
            if u & 0xFFFF:
                raise AssertionError("value not representable in bf16")
            out += struct.pack("<H", u >> 16)
        return bytes(out)
    return struct.pack("<%d%s" % (len(values), fmt[1]), *values)

# ---------------------------------------------------------------- tensors


def tensor_list(cfg):
    """[(name, shape, kind)] for a variant; kind selects the distribution."""
    H, I, P = cfg["hidden"], cfg["intermediate"], cfg["max_pos"]
    V, T = cfg["vocab"], cfg["type_vocab"]
    pre = cfg["prefix"]
    g, b = ("gamma", "beta") if cfg["legacy_ln"] else ("weight", "bias")
    out = []

    def ln(base):
        out.append((base + ".LayerNorm." + g, [H], "ln_gamma"))
        out.append((base + ".LayerNorm." + b, [H], "ln_beta"))

    def dense(base, n_out, n_in, kind):
        out.append((base + ".weight", [n_out, n_in], kind))
        out.append((base + ".bias", [n_out], "bias"))

    e = pre + "embeddings"
    out.append((e + ".word_embeddings.weight", [V, H], "embedding"))
    out.append((e + ".position_embeddings.weight", [P, H], "embedding"))
    out.append((e + ".token_type_embeddings.weight", [T, H], "embedding"))
    ln(e)
    for i in range(cfg["layers"]):
        L = "%sencoder.layer.%d" % (pre, i)
        dense(L + ".attention.self.query", H, H, "qk")
        dense(L + ".attention.self.key", H, H, "qk")
        dense(L + ".attention.self.value", H, H, "v")
        dense(L + ".attention.output.dense", H, H, "proj")
        ln(L + ".attention.output")
        dense(L + ".intermediate.dense", I, H, "proj")
        dense(L + ".output.dense", H, I, "proj_down")
        ln(L + ".output")
    if cfg["pooler"]:
        dense(pre + "pooler.dense", H, H, "proj")
    if cfg["extras"] == "pretraining":
        # What a BertForPreTraining checkpoint carries besides the encoder
        # (the decoder weight is tied to the word embeddings, so not saved),
        # plus the int64 position_ids buffer old checkpoints have.
        out.append((pre + "embeddings.position_ids", [1, P], "position_ids"))
        dense("cls.predictions.transform.dense", H, H, "proj")
        ln("cls.predictions.transform")
        out.append(("cls.predictions.bias", [V], "bias"))
        dense("cls.seq_relationship", 2, H, "proj")
    elif cfg["extras"] == "classifier":
        dense("classifier", 2, H, "proj")
    return out


STD = {"embedding": 0.5, "qk": 0.17, "v": 0.15, "proj": 0.08,
       "proj_down": 0.06, "bias": 0.1}


def tensor_values(variant, name, shape, kind):
    n = 1
    for d in shape:
        n *= d
    rng = SplitMix64(fnv1a64(variant + "/" + name))
    if kind == "position_ids":
        return list(range(n))
    if kind == "ln_gamma":
        return [1.0 + 0.2 * rng.uniform_pm1() for _ in range(n)]
    if kind == "ln_beta":
        return [0.1 * rng.uniform_pm1() for _ in range(n)]
    std = STD[kind]
    return [std * rng.normalish() for _ in range(n)]


def safetensors_bytes(variant, cfg, tensors=None):
    """model.safetensors of `tensors` ([(name, shape, kind)]; default: the
    variant's BERT tensors), every value stored in cfg["dtype"]."""
    entries = []
    for name, shape, kind in (tensor_list(cfg) if tensors is None else tensors):
        vals = tensor_values(variant, name, shape, kind)
        if kind == "position_ids":
            dtype, data = "I64", struct.pack("<%dq" % len(vals), *vals)
        else:
            dtype = cfg["dtype"]
            data = pack_values([round_to(v, dtype) for v in vals], dtype)
        entries.append((name, dtype, shape, data))
    names = [e[0] for e in entries]
    if len(set(names)) != len(names):
        raise AssertionError("duplicate tensor name")
    itemsize = {"I64": 8, "F32": 4, "F16": 2, "BF16": 2}
    entries.sort(key=lambda e: (-itemsize[e[1]], e[0]))
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape, data in entries:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"))
    raw = text.encode("utf-8")
    raw += b" " * ((-len(raw)) % 8)
    return b"".join([struct.pack("<Q", len(raw)), raw] +
                    [e[3] for e in entries])

# ---------------------------------------------------------------- text files


def config_json(cfg):
    conf = {
        "architectures": cfg["architectures"],
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": cfg["act"],
        "hidden_dropout_prob": 0.1,
        "hidden_size": cfg["hidden"],
        "initializer_range": 0.02,
        "intermediate_size": cfg["intermediate"],
        "layer_norm_eps": cfg["eps"],
        "max_position_embeddings": cfg["max_pos"],
        "model_type": "bert",
        "num_attention_heads": cfg["heads"],
        "num_hidden_layers": cfg["layers"],
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "type_vocab_size": cfg["type_vocab"],
        "vocab_size": cfg["vocab"],
    }
    return json.dumps(conf, indent=2, sort_keys=True) + "\n"


WORDS = """
the of and to in is was he for it with as his on be at by this had not are
but from or have an they which one you were her all she there would their we
him been has when who will more no if out so said what up its about into than
them can only other new some could time these two may then do first any my now
such like our over man me even most made after also did many before must through
back years where much your way well down should because each just those people
how too little state good very make world still own see men work long get here
between both life being under never day same another know while last might us
great old year off come since against go came right used take three hello quick
brown fox jumps lazy dog cat play run walk talk sentence model token bert
encoder attention mask layer norm hidden compile kernel gpu test golden
un re pre
""".split()

PIECES = """
##ed ##ing ##ly ##er ##est ##es ##ion ##al ##able ##ness ##ment ##ful ##less
##ize ##ise ##ity ##ous ##ive ##ant ##ent ##ic ##en ##'s
""".split()


def vocab_lines(size):
    toks = ["[PAD]"] + ["[unused%d]" % i for i in range(99)]
    toks += ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    next_unused = 99
    singles = [chr(c) for c in range(33, 127) if not chr(c).isupper()]
    toks += singles
    toks += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    toks += WORDS + PIECES
    if len(set(toks)) != len(toks):
        raise AssertionError("duplicate vocabulary entry")
    toks = toks[:size]
    while len(toks) < size:
        toks.append("[unused%d]" % next_unused)
        next_unused += 1
    assert toks[0] == "[PAD]" and toks[100] == "[UNK]" and toks[103] == "[MASK]"
    return "".join(t + "\n" for t in toks)


def tokenizer_config_json(cfg):
    conf = {
        "cls_token": "[CLS]",
        "do_basic_tokenize": True,
        "do_lower_case": True,
        "mask_token": "[MASK]",
        "model_max_length": cfg["max_pos"],
        "never_split": None,
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "strip_accents": None,
        "tokenize_chinese_chars": True,
        "tokenizer_class": "BertTokenizer",
        "unk_token": "[UNK]",
    }
    return json.dumps(conf, indent=2, sort_keys=True) + "\n"

# ---------------------------------------------------------------- output


def write_atomic(path, data):
    head, tail = os.path.split(path)
    tmp = os.path.join(head, ".%s.tmp.%d" % (tail, os.getpid()))
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def build(variant, out_dir):
    cfg = VARIANTS[variant]
    os.makedirs(out_dir, exist_ok=True)
    files = {"config.json": config_json(cfg).encode("utf-8")}
    if cfg["vocab_txt"]:
        files["vocab.txt"] = vocab_lines(cfg["vocab"]).encode("utf-8")
    if cfg["tokenizer_config"]:
        files["tokenizer_config.json"] = \
            tokenizer_config_json(cfg).encode("utf-8")
    model = safetensors_bytes(variant, cfg)
    for stale in ("vocab.txt", "tokenizer_config.json"):
        p = os.path.join(out_dir, stale)
        if stale not in files and os.path.exists(p):
            os.remove(p)
    for name in sorted(files):
        write_atomic(os.path.join(out_dir, name), files[name])
    write_atomic(os.path.join(out_dir, "model.safetensors"), model)


def main(argv):
    usage = ("usage: make_tiny_bert.py --variant NAME OUT_DIR\n"
             "       make_tiny_bert.py --list\n"
             "variants: " + ", ".join(sorted(VARIANTS)))
    if argv == ["--list"]:
        print("\n".join(sorted(VARIANTS)))
        return 0
    if len(argv) != 3 or argv[0] != "--variant":
        print(usage, file=sys.stderr)
        return 2
    variant, out_dir = argv[1], argv[2]
    if variant not in VARIANTS:
        print("make_tiny_bert: unknown variant '%s' (expected one of %s)"
              % (variant, ", ".join(sorted(VARIANTS))), file=sys.stderr)
        return 2
    build(variant, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
