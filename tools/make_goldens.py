#!/usr/bin/env python3
"""make_goldens — Hugging Face reference outputs for the test models.

Usage (needs torch + transformers; CI never runs this, its output is
committed):
    /usr/bin/python3 tools/make_goldens.py [NAME ...]
NAME is one of the tiny variants of tools/make_tiny_bert.py or
all-MiniLM-L6-v2; without names every model is done.

Design.  Truth for bertc is transformers' BertModel.  This script builds each
fixture directory exactly as `make fixtures` does (build/hf/NAME, by running
tools/make_tiny_bert.py or tools/fetch_minilm.sh), loads it with
BertModel.from_pretrained in float32, eval mode, eager attention, and records
the inputs and outputs of a fixed list of cases in tests/golden/NAME.bgld.
Before trusting the outputs it checks that every parameter of the loaded
model equals the corresponding tensor of model.safetensors (so a key that
transformers silently failed to map, e.g. a legacy LayerNorm.gamma, cannot
turn into a randomly initialised weight in a golden), that the outputs are
finite, that masking a position actually changes the result, and it reruns
every case in float64 to record how much float32 rounding alone moves the
output (the floor for any tolerance).  Case inputs come from the same
splitmix64 generator as the tiny models, so a rerun writes the same inputs.

Golden file format, version 1 (all integers little-endian):
    offset 0  magic "BGLD" (4 bytes), u32 version = 1
              u32 header_len, header_len bytes of UTF-8 text: lines
                  "key: value" (producer, python/torch/transformers versions,
                  model, model_sha256, per-case notes)
              u32 ncases
    per case  u32 name_len, name bytes (UTF-8, no NUL)
              u32 len (S), u32 hidden, u32 flags
                  bit0 token_type_ids present, bit1 attention_mask present,
                  bit2 pooler_output present; other bits must be 0
              i32 input_ids[S]
              i32 token_type_ids[S]       if bit0
              i32 attention_mask[S]       if bit1
              f32 last_hidden_state[S*hidden]   (row-major, [S, hidden])
              f32 pooler_output[hidden]   if bit2
    the file ends right after the last case.
An input that is absent was not passed to transformers, so it used its
default: token_type_ids all 0, attention_mask all 1.
"""

import hashlib
import json
import os
import platform
import struct
import subprocess
import sys

import numpy as np
import torch
import transformers
from safetensors.torch import load_file
from transformers import BertModel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_tiny_bert  # noqa: E402  (same directory; standard library only)

MINILM = "all-MiniLM-L6-v2"
MAGIC = b"BGLD"
VERSION = 1
FLAG_TYPES, FLAG_MASK, FLAG_POOLER = 1, 2, 4


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_dir(name):
    return os.path.join(ROOT, "build", "hf", name)


def prepare_dir(name):
    d = model_dir(name)
    if name == MINILM:
        if not os.path.exists(os.path.join(d, "model.safetensors")):
            subprocess.check_call(["sh", os.path.join(ROOT, "tools", "fetch_minilm.sh"), d])
    else:
        subprocess.check_call([sys.executable,
                               os.path.join(ROOT, "tools", "make_tiny_bert.py"),
                               "--variant", name, d])
    return d

# ---------------------------------------------------------------- loading


def hf_key_for(param_name, file_keys):
    """The safetensors key that should hold BertModel parameter param_name."""
    cands = [param_name, "bert." + param_name]
    for c in list(cands):
        if c.endswith("LayerNorm.weight"):
            cands.append(c[:-len("weight")] + "gamma")
        if c.endswith("LayerNorm.bias"):
            cands.append(c[:-len("bias")] + "beta")
    hits = [c for c in cands if c in file_keys]
    if len(hits) != 1:
        raise AssertionError("parameter %s: candidates in file %r" % (param_name, hits))
    return hits[0]


def load_model(d):
    st = load_file(os.path.join(d, "model.safetensors"))
    has_pooler = any(k.endswith("pooler.dense.weight") for k in st)
    kwargs = dict(add_pooling_layer=has_pooler, torch_dtype=torch.float32,
                  output_loading_info=True)
    try:
        model, info = BertModel.from_pretrained(d, attn_implementation="eager", **kwargs)
    except TypeError:
        model, info = BertModel.from_pretrained(d, **kwargs)
    model.eval()
    if info["missing_keys"] or info["mismatched_keys"] or info.get("error_msgs"):
        raise AssertionError("%s: loading problems %r" % (d, info))
    # Every parameter must be exactly the (upcast) stored tensor.
    for pname, p in model.named_parameters():
        key = hf_key_for(pname, st)
        want = st[key].to(torch.float32)
        if tuple(want.shape) != tuple(p.shape) or not torch.equal(want, p.detach()):
            raise AssertionError("%s: parameter %s differs from %s" % (d, pname, key))
    return model, has_pooler

# ---------------------------------------------------------------- cases


class Case:
    def __init__(self, name, ids, types=None, mask=None, note=None):
        self.name = name
        self.ids = [int(x) for x in ids]
        self.types = None if types is None else [int(x) for x in types]
        self.mask = None if mask is None else [int(x) for x in mask]
        self.note = note
        for arr in (self.types, self.mask):
            assert arr is None or len(arr) == len(self.ids)


def tiny_cases(name, cfg):
    rng = make_tiny_bert.SplitMix64(make_tiny_bert.fnv1a64("goldens/" + name))
    V, T, P = cfg["vocab"], cfg["type_vocab"], cfg["max_pos"]

    def ids(n):
        return [rng.below(V) for _ in range(n)]

    def types(n):
        return [rng.below(T) for _ in range(n)]

    cases = []
    cases.append(Case("len1_ids_only", ids(1)))
    ids7, types7 = ids(7), types(7)
    cases.append(Case("len7_types_mask_ones", ids7, types7, [1] * 7))
    cases.append(Case("len7_mask_tail", ids7, types7, [1] * 4 + [0] * 3))
    mask13 = [1] * 13
    for k in (4, 5, 6, 9):
        mask13[k] = 0
    cases.append(Case("len13_mask_middle", ids(13), types(13), mask13))
    maskP = [1] * P
    for k in (1, P // 3, P // 2, P // 2 + 1, P - 2):
        maskP[k] = 0
    cases.append(Case("len%d_max_position" % P, ids(P), types(P), maskP))
    cases.append(Case("len9_mask_all_zero", ids(9), types(9), [0] * 9))
    return cases


MINILM_TEXTS = [
    ("sentence_example", "This is an example sentence.", None),
    ("sentence_vector", "Each sentence is converted to a 384-dimensional dense vector space.", None),
    ("sentence_pair", "How do I compile a BERT encoder for my GPU?",
     "Ahead-of-time compilation removes Python from the serving path."),
    ("sentence_fox", "The quick brown fox jumps over the lazy dog!", None),
    ("sentence_unicode", "Héllo, Wörld: naïve café façade, 東京 and ÜBER-long-words like "
     "antidisestablishmentarianism.", None),
]


def minilm_cases(d):
    from transformers import BertTokenizerFast
    tok = BertTokenizerFast.from_pretrained(d)
    cases = []
    for cname, text, pair in MINILM_TEXTS:
        enc = tok(text, pair) if pair is not None else tok(text)
        note = json.dumps([text] if pair is None else [text, pair], ensure_ascii=False)
        cases.append(Case(cname, enc["input_ids"], enc["token_type_ids"],
                          enc["attention_mask"], note="text " + note))
    # a padded request, as a batch would send it
    text = "A short one."
    enc = tok(text, padding="max_length", max_length=16)
    cases.append(Case("sentence_padded16", enc["input_ids"], enc["token_type_ids"],
                      enc["attention_mask"],
                      note="text " + json.dumps([text]) + " padded to 16"))
    cases.append(Case("len1_cls_only", [tok.cls_token_id]))
    rng = make_tiny_bert.SplitMix64(make_tiny_bert.fnv1a64("goldens/" + MINILM))
    S = 512
    ids = [rng.below(tok.vocab_size) for _ in range(S)]
    ids[0] = tok.cls_token_id
    types = [rng.below(2) for _ in range(S)]
    mask = [1] * S
    for k in range(200, 232):
        mask[k] = 0
    for k in range(S - 45, S):
        mask[k] = 0
    cases.append(Case("len512_random_mask", ids, types, mask))
    return cases

# ---------------------------------------------------------------- running


def run_case(model, case, dtype=torch.float32):
    kw = {"input_ids": torch.tensor([case.ids], dtype=torch.long)}
    if case.types is not None:
        kw["token_type_ids"] = torch.tensor([case.types], dtype=torch.long)
    if case.mask is not None:
        kw["attention_mask"] = torch.tensor([case.mask], dtype=torch.long)
    with torch.no_grad():
        out = model(**kw)
    lhs = out.last_hidden_state[0].to(dtype).numpy().copy()
    pool = None
    if getattr(out, "pooler_output", None) is not None:
        pool = out.pooler_output[0].to(dtype).numpy().copy()
    return lhs, pool


def pack_case(case, hidden, lhs, pool):
    flags = 0
    if case.types is not None:
        flags |= FLAG_TYPES
    if case.mask is not None:
        flags |= FLAG_MASK
    if pool is not None:
        flags |= FLAG_POOLER
    name = case.name.encode("utf-8")
    S = len(case.ids)
    assert lhs.shape == (S, hidden)
    parts = [struct.pack("<I", len(name)), name,
             struct.pack("<III", S, hidden, flags),
             np.asarray(case.ids, dtype="<i4").tobytes()]
    if case.types is not None:
        parts.append(np.asarray(case.types, dtype="<i4").tobytes())
    if case.mask is not None:
        parts.append(np.asarray(case.mask, dtype="<i4").tobytes())
    parts.append(np.ascontiguousarray(lhs, dtype="<f4").tobytes())
    if pool is not None:
        assert pool.shape == (hidden,)
        parts.append(np.ascontiguousarray(pool, dtype="<f4").tobytes())
    return b"".join(parts)


def make_golden(name):
    d = prepare_dir(name)
    st_path = os.path.join(d, "model.safetensors")
    digest = sha256_file(st_path)
    with open(os.path.join(d, "config.json")) as f:
        conf = json.load(f)
    hidden = conf["hidden_size"]
    model, has_pooler = load_model(d)
    model64, _ = load_model(d)
    model64 = model64.double()
    if name == MINILM:
        cases = minilm_cases(d)
    else:
        cases = tiny_cases(name, make_tiny_bert.VARIANTS[name])

    lines = [
        "producer: tools/make_goldens.py",
        "format: BGLD 1",
        "python: %s" % platform.python_version(),
        "torch: %s" % torch.__version__,
        "transformers: %s" % transformers.__version__,
        "numpy: %s" % np.__version__,
        "model: %s" % name,
        "model_sha256: %s" % digest,
        "config: hidden=%d heads=%d layers=%d intermediate=%d vocab=%d max_position=%d "
        "type_vocab=%d act=%s eps=%g" % (
            hidden, conf["num_attention_heads"], conf["num_hidden_layers"],
            conf["intermediate_size"], conf["vocab_size"], conf["max_position_embeddings"],
            conf["type_vocab_size"], conf["hidden_act"], conf["layer_norm_eps"]),
        "pooler: %s" % ("yes" if has_pooler else "no"),
        "compute: BertModel float32 eval, eager attention, CPU",
    ]
    body = []
    print("%s (sha256 %s, pooler %s)" % (name, digest[:16], has_pooler))
    for case in cases:
        lhs, pool = run_case(model, case)
        if not np.all(np.isfinite(lhs)) or (pool is not None and not np.all(np.isfinite(pool))):
            raise AssertionError("%s/%s: non-finite output" % (name, case.name))
        lhs64, pool64 = run_case(model64, case, torch.float64)
        d64 = float(np.max(np.abs(lhs.astype(np.float64) - lhs64)))
        p64 = 0.0 if pool is None else float(np.max(np.abs(pool.astype(np.float64) - pool64)))
        msg = "  %-24s S=%-4d max|lhs|=%8.4f max|pool|=%7.4f fp64 diff lhs %.2e pool %.2e" % (
            case.name, len(case.ids), float(np.max(np.abs(lhs))),
            0.0 if pool is None else float(np.max(np.abs(pool))), d64, p64)
        if case.mask is not None and 0 in case.mask:
            unmasked = Case(case.name, case.ids, case.types, None)
            lhs_u, _ = run_case(model, unmasked)
            dm = float(np.max(np.abs(lhs_u - lhs)))
            msg += " mask effect %.3f" % dm
            if dm < 1e-2:
                raise AssertionError("%s/%s: the mask does not change the output" % (name, case.name))
        print(msg)
        lines.append("case %s: len=%d fp64_max_abs_diff=%.3e pooler_fp64_max_abs_diff=%.3e" % (
            case.name, len(case.ids), d64, p64))
        if case.note:
            lines.append("case %s %s" % (case.name, case.note))
        body.append(pack_case(case, hidden, lhs, pool if has_pooler else None))

    header = ("\n".join(lines) + "\n").encode("utf-8")
    blob = b"".join([MAGIC, struct.pack("<II", VERSION, len(header)), header,
                     struct.pack("<I", len(body))] + body)
    out = os.path.join(ROOT, "tests", "golden", name + ".bgld")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp.%d" % os.getpid()
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, out)
    print("  wrote %s (%d bytes)" % (os.path.relpath(out, ROOT), len(blob)))


def main(argv):
    names = argv or sorted(make_tiny_bert.VARIANTS) + [MINILM]
    for n in names:
        if n != MINILM and n not in make_tiny_bert.VARIANTS:
            print("make_goldens: unknown model '%s'" % n, file=sys.stderr)
            return 2
    torch.manual_seed(0)
    torch.set_num_threads(1)
    for n in names:
        make_golden(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
