#!/usr/bin/env python3
"""make_family_goldens — transformers' outputs for the family fixtures.

Usage (needs torch + transformers + sentence-transformers; CI never runs
this, its output is committed; /work/venv-hf has the pinned versions):
    python3 tools/make_family_goldens.py [NAME ...]
NAME is a variant of tools/make_tiny_family.py; without names, all.

Design.  As tools/make_goldens.py does for BERT: build the fixture exactly as
`make fixtures` does, load it with transformers' own class for its
architecture (RobertaForSequenceClassification, XLMRobertaForTokenClassifi-
cation, DistilBertForSequenceClassification, ElectraForSequenceClassifica-
tion, MPNetModel, ...) in float32, eval mode, eager attention, and refuse
it unless every parameter is exactly the stored tensor and no key is missing
or unexpected — so the fixture's tensor names are the family's real names.
The one allowed exception is DistilBERT's sinusoidal position table, which
the fixture leaves out: the script installs transformers' own sinusoid
(create_sinusoidal_embeddings), which is what bertc computes at import.
Each case records the inputs, the last hidden state, the pooler output
when the model has one, the head's `logits` ([num_labels], or [S,
num_labels] for token classification) and, for a sentence-transformers
directory, SentenceTransformer's `sentence_embedding`.  Every case is rerun
in float64 to record how far float32 rounding alone moves the outputs.

Format: BGLD version 1 as written by tools/make_goldens.py, with two more
flag bits (a reader that does not know them refuses the file):
    bit3 logits present:             u32 n, f32 logits[n]    (after the pooler)
    bit4 sentence_embedding present: u32 n, f32 embedding[n]
"""

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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_tiny_bert as mtb  # noqa: E402
import make_tiny_family as mtf  # noqa: E402
from make_goldens import sha256_file  # noqa: E402

MAGIC = b"BGLD"
VERSION = 1
FLAG_TYPES, FLAG_MASK, FLAG_POOLER, FLAG_LOGITS, FLAG_SENTENCE = 1, 2, 4, 8, 16


def prepare_dir(name):
    d = os.path.join(ROOT, "build", "hf", name)
    subprocess.check_call([sys.executable, os.path.join(ROOT, "tools", "make_tiny_family.py"),
                           "--variant", name, d])
    return d


def load_model(d, cfg):
    arch = getattr(transformers, cfg["architectures"][0])
    kw = dict(torch_dtype=torch.float32, output_loading_info=True, attn_implementation="eager")
    model, info = arch.from_pretrained(d, **kw)
    model.eval()
    missing = list(info["missing_keys"])
    if cfg["family"] == "distilbert" and cfg.get("sinusoidal"):
        want = ["distilbert.embeddings.position_embeddings.weight"]
        if missing != want:
            raise AssertionError("%s: missing keys %r (expected only %r)" % (d, missing, want))
        from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings
        emb = model.distilbert.embeddings.position_embeddings
        with torch.no_grad():
            create_sinusoidal_embeddings(cfg["max_pos"], cfg["hidden"], emb.weight)
        missing = []
    if missing or info["unexpected_keys"] or info["mismatched_keys"] or info.get("error_msgs"):
        raise AssertionError("%s: loading problems %r" % (d, info))
    st = load_file(os.path.join(d, "model.safetensors"))
    prefix = model.base_model_prefix + "."
    for pname, p in model.named_parameters():
        key = pname if pname in st else prefix + pname
        if key not in st:
            if pname.endswith("position_embeddings.weight") and cfg.get("sinusoidal"):
                continue
            raise AssertionError("%s: parameter %s is not in the file" % (d, pname))
        if not torch.equal(st[key].to(torch.float32), p.detach()):
            raise AssertionError("%s: parameter %s differs from %s" % (d, pname, key))
    return model


class Case:
    def __init__(self, name, ids, types=None, mask=None, note=None):
        self.name, self.ids, self.types, self.mask, self.note = name, [int(x) for x in ids], types, mask, note


def sentence_model(d, cfg):
    """SentenceTransformer of the directory's modules.  sentence-transformers
    2.7's Dense.load reads only pytorch_model.bin, and the fixture (like
    current sentence-transformers releases) stores 2_Dense/model.safetensors,
    so the pipeline is assembled from its own module classes here, the Dense
    weights loaded from that file."""
    from sentence_transformers import SentenceTransformer, models
    st = cfg["sentence_transformers"]
    mods = [models.Transformer(d), models.Pooling.load(os.path.join(d, "1_Pooling"))]
    with open(os.path.join(d, "2_Dense", "config.json")) as f:
        dc = json.load(f)
    act = {"torch.nn.modules.activation.Tanh": torch.nn.Tanh(),
           "torch.nn.modules.linear.Identity": torch.nn.Identity()}[dc["activation_function"]]
    dense = models.Dense(dc["in_features"], dc["out_features"], bias=dc["bias"], activation_function=act)
    w = load_file(os.path.join(d, "2_Dense", "model.safetensors"))
    dense.linear.load_state_dict({"weight": w["linear.weight"], "bias": w["linear.bias"]})
    mods.append(dense)
    if st["normalize"]:
        mods.append(models.Normalize())
    m = SentenceTransformer(modules=mods, device="cpu")
    m.eval()
    return m


def family_cases(name, cfg):
    rng = mtb.SplitMix64(mtb.fnv1a64("goldens/" + name))
    fam = cfg["family"]
    V = cfg["vocab"]
    roberta_pos = fam in ("roberta", "xlm-roberta", "mpnet")
    smax = cfg["max_pos"] - 2 if roberta_pos else cfg["max_pos"]
    use_types = fam in ("bert", "electra") or (fam in ("roberta", "xlm-roberta"))
    T = cfg.get("type_vocab", 1)

    def ids(n):
        return [rng.below(V) for _ in range(n)]

    def types(n):
        return [rng.below(T) for _ in range(n)] if use_types else None

    cases = [Case("len1_ids_only", ids(1))]
    i7 = ids(7)
    cases.append(Case("len7_types_mask_ones", i7, types(7), [1] * 7))
    cases.append(Case("len7_mask_tail", i7, types(7), [1] * 4 + [0] * 3))
    m13 = [1] * 13
    for k in (4, 5, 9):
        m13[k] = 0
    i13 = ids(13)
    if roberta_pos:  # pad ids inside the text move the position ids
        i13[3] = 1
        i13[10] = 1
    cases.append(Case("len13_mask_middle", i13, types(13), m13))
    mS = [1] * smax
    for k in (1, smax // 3, smax // 2, smax - 2):
        mS[k] = 0
    cases.append(Case("len%d_max_position" % smax, ids(smax), types(smax), mS))
    if roberta_pos:  # a batch-padded request: pad ids where the mask is 0
        ip = ids(11) + [1] * 6
        cases.append(Case("len17_padded_batch", ip, types(17), [1] * 11 + [0] * 6))
    cases.append(Case("len9_mask_all_zero", ids(9), types(9), [0] * 9))
    return cases


# Texts through the fixture's own tokenizer (AutoTokenizer), for the
# fixtures whose tokenizer differs from BERT's: the cross-encoder's pairs,
# RoBERTa's byte-level BPE, XLM-R's Unigram, MPNet's <s> A </s></s> B </s>.
TEXTS = {
    "tiny-cross-encoder": [("text_pair_fox", "the quick brown fox", "a lazy dog"),
                           ("text_pair_model", "how do i compile a model", "the gpu runs the kernel")],
    "tiny-roberta": [("text_pair_review", "Hello wörld, the quick brown fox!", " and a second text"),
                     ("text_single_mask", "It was  <mask> good.", None)],
    "tiny-xlmr-tokcls": [("text_single_names", "Hello wörld — Zürich and Ελλάδα", None),
                         ("text_pair_short", "the quick fox", "a lazy dog")],
    "tiny-mpnet": [("text_pair_fox", "the quick brown fox", "a lazy dog"),
                   ("text_single_mask", "how do i <mask>x a model", None)],
}


def text_cases(name, d):
    """TEXTS[name] through the directory's own tokenizer: its ids, its token
    types when it gives them (else the model's default), the note the tests
    read the texts from."""
    tok = transformers.AutoTokenizer.from_pretrained(d)
    out = []
    for cname, a, b in TEXTS.get(name, []):
        enc = tok(a, b) if b is not None else tok(a)
        out.append(Case(cname, enc["input_ids"], enc.get("token_type_ids"), enc["attention_mask"],
                        note="text " + json.dumps([a, b] if b is not None else [a])))
    return out


def run_case(model, st_model, case, cfg, dtype):
    kw = {"input_ids": torch.tensor([case.ids], dtype=torch.long)}
    if case.types is not None:
        kw["token_type_ids"] = torch.tensor([case.types], dtype=torch.long)
    if case.mask is not None:
        kw["attention_mask"] = torch.tensor([case.mask], dtype=torch.long)
    with torch.no_grad():
        out = model(**kw, output_hidden_states=True)
    res = {"lhs": out.hidden_states[-1][0].to(dtype).numpy().copy()}
    if getattr(out, "pooler_output", None) is not None:
        res["pool"] = out.pooler_output[0].to(dtype).numpy().copy()
    if getattr(out, "logits", None) is not None:
        res["logits"] = out.logits[0].to(dtype).numpy().copy().reshape(-1)
    if st_model is not None:
        feats = {"input_ids": kw["input_ids"],
                 "attention_mask": kw.get("attention_mask", torch.ones_like(kw["input_ids"]))}
        with torch.no_grad():
            emb = st_model(feats)["sentence_embedding"]
        res["sentence"] = emb[0].to(dtype).numpy().copy()
    return res


def pack_case(case, hidden, res):
    flags = (FLAG_TYPES if case.types is not None else 0) | (FLAG_MASK if case.mask is not None else 0)
    flags |= (FLAG_POOLER if "pool" in res else 0) | (FLAG_LOGITS if "logits" in res else 0)
    flags |= FLAG_SENTENCE if "sentence" in res else 0
    name = case.name.encode("utf-8")
    S = len(case.ids)
    parts = [struct.pack("<I", len(name)), name, struct.pack("<III", S, hidden, flags),
             np.asarray(case.ids, dtype="<i4").tobytes()]
    for arr in (case.types, case.mask):
        if arr is not None:
            parts.append(np.asarray(arr, dtype="<i4").tobytes())
    assert res["lhs"].shape == (S, hidden)
    parts.append(np.ascontiguousarray(res["lhs"], dtype="<f4").tobytes())
    if "pool" in res:
        parts.append(np.ascontiguousarray(res["pool"], dtype="<f4").tobytes())
    for key in ("logits", "sentence"):
        if key in res:
            parts += [struct.pack("<I", res[key].size), np.ascontiguousarray(res[key], dtype="<f4").tobytes()]
    return b"".join(parts)


def max_diff(a, b):
    """float32 vs float64 outputs; a NaN in the float64 run (an all-masked row
    can give one there) counts as no information, not as a difference."""
    return max(float(np.nanmax(np.abs(a[k].astype(np.float64) - b[k]))) if np.any(np.isfinite(b[k])) else 0.0
               for k in a)


def make_golden(name):
    cfg = mtf.VARIANTS[name]
    d = prepare_dir(name)
    model = load_model(d, cfg)
    model64 = load_model(d, cfg).double()
    st_model = st_model64 = None
    if cfg.get("sentence_transformers"):
        st_model = sentence_model(d, cfg)
        st_model64 = sentence_model(d, cfg).double()
    cases = family_cases(name, cfg) + text_cases(name, d)
    digest = sha256_file(os.path.join(d, "model.safetensors"))
    lines = [
        "producer: tools/make_family_goldens.py",
        "format: BGLD 1 (+ logits, sentence_embedding flags)",
        "python: %s" % platform.python_version(),
        "torch: %s" % torch.__version__,
        "transformers: %s" % transformers.__version__,
        "numpy: %s" % np.__version__,
        "model: %s" % name,
        "model_sha256: %s" % digest,
        "family: %s" % cfg["family"],
        "architecture: %s" % cfg["architectures"][0],
        "compute: %s float32 eval, eager attention, CPU" % cfg["architectures"][0],
    ]
    if st_model is not None:
        import sentence_transformers
        lines.append("sentence_transformers: %s" % sentence_transformers.__version__)
    body = []
    print("%s (sha256 %s)" % (name, digest[:16]))
    for case in cases:
        res = run_case(model, st_model, case, cfg, torch.float32)
        for k, v in res.items():
            if not np.all(np.isfinite(v)):
                raise AssertionError("%s/%s: non-finite %s" % (name, case.name, k))
        res64 = run_case(model64, st_model64, case, cfg, torch.float64)
        d64 = max_diff(res, res64)
        msg = "  %-22s S=%-3d max|lhs|=%7.3f fp64 diff %.2e" % (case.name, len(case.ids),
                                                              float(np.max(np.abs(res["lhs"]))), d64)
        if "logits" in res:
            msg += " logits %s" % np.array2string(res["logits"][:4], precision=4)
        if case.mask is not None and 0 in case.mask and 1 in case.mask:
            un = run_case(model, None, Case(case.name, case.ids, case.types, None), cfg, torch.float32)
            dm = float(np.max(np.abs(un["lhs"] - res["lhs"])))
            msg += " mask effect %.3f" % dm
            if dm < 1e-2:
                raise AssertionError("%s/%s: the mask does not change the output" % (name, case.name))
        print(msg)
        lines.append("case %s: len=%d fp64_max_abs_diff=%.3e" % (case.name, len(case.ids), d64))
        if case.note:
            lines.append("case %s %s" % (case.name, case.note))
        body.append(pack_case(case, cfg["hidden"], res))
    header = ("\n".join(lines) + "\n").encode("utf-8")
    blob = b"".join([MAGIC, struct.pack("<II", VERSION, len(header)), header, struct.pack("<I", len(body))] + body)
    out = os.path.join(ROOT, "tests", "golden", name + ".bgld")
    tmp = out + ".tmp.%d" % os.getpid()
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, out)
    print("  wrote %s (%d bytes)" % (os.path.relpath(out, ROOT), len(blob)))


def main(argv):
    names = argv or sorted(mtf.VARIANTS)
    for n in names:
        if n not in mtf.VARIANTS:
            print("make_family_goldens: unknown model '%s'" % n, file=sys.stderr)
            return 2
    torch.manual_seed(0)
    torch.set_num_threads(1)
    for n in names:
        make_golden(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
