#!/usr/bin/env python3
"""make_sentence_goldens — sentence-transformers reference embeddings.

Usage (needs torch + transformers + sentence-transformers; CI never runs
this, its output is committed; see docs/testing.md "Sentence-embedding
goldens" for the exact environment):
    HF_HUB_OFFLINE=1 /tmp/stenv/bin/python tools/make_sentence_goldens.py [--model NAME] [--check]
NAME is all-MiniLM-L6-v2 (the default; build/hf/ from tools/fetch_minilm.sh)
or all-mpnet-base-v2 (tools/fetch_mpnet.sh); the output is
tests/golden/NAME-sentences.bsen.  --check computes everything and compares
it with the committed file instead of writing it (exit 1 if the bytes
differ).

Design.  Truth for bertc's sentence embeddings (mean pooling over the
attention mask, then L2 normalisation) is sentence-transformers itself:
SentenceTransformer(build/hf/all-MiniLM-L6-v2, device="cpu") loads the
model's own modules.json (Transformer -> Pooling(mean) -> Normalize) with
max_seq_length 256 from sentence_bert_config.json, and model.encode(...)
is what users call.  Each sentence of a fixed list is encoded on its own
(batch of one, so no padding enters the arithmetic), in float32, one CPU
thread.  For each sentence the file records the token ids the model's
tokenizer produced (SentenceTransformer.tokenize: Python str.strip(), then
BertTokenizerFast with truncation to max_seq_length), the output of the
Pooling module (before Normalize) and the final embedding, so a failure in
bertc can be localised to tokenisation, the encoder + pooling, or the
normalisation.  Before writing it checks that encode() equals the
module-by-module result bit for bit, that the ids are exactly what the
tokenizer gives for the stripped text, that at least one sentence is
truncated, and it reruns every sentence with the model in float64 to record
how far float32 rounding alone moves the outputs (the floor for any
tolerance).  The same software writes the same bytes.

File format, version 1 (all integers little-endian):
    offset 0  magic "BSEN" (4 bytes), u32 version = 1
              u32 header_len, header_len bytes of UTF-8 text: lines
                  "key: value" (producer, package versions, model,
                  model_sha256, max_seq_length, dim, per-case notes)
              u32 ncases
    per case  u32 text_len, text_len bytes of UTF-8 (the text passed to
                  encode(), before sentence-transformers strips it)
              u32 n_ids (>= 1), i32 ids[n_ids]   ([CLS] ... [SEP], truncated)
              u32 dim, f32 mean_pooled[dim]      (Pooling output, float32)
                       f32 embedding[dim]        (encode() output, unit norm)
    the file ends right after the last case.
Reader: tests/support/sentences.{h,c}.
"""

import argparse
import copy
import hashlib
import json
import os
import platform
import struct
import sys

import numpy as np
import torch
import transformers
import tokenizers
import sentence_transformers
from sentence_transformers import SentenceTransformer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
MODEL = MODELS[0]
MODEL_DIR = OUT = None


def select_model(name):
    global MODEL, MODEL_DIR, OUT
    MODEL = name
    MODEL_DIR = os.path.join(ROOT, "build", "hf", MODEL)
    OUT = os.path.join(ROOT, "tests", "golden", MODEL + "-sentences.bsen")


select_model(MODEL)
MAGIC = b"BSEN"
VERSION = 1

LONG_PARAGRAPH = (
    "Sentence embeddings map a piece of text to a single fixed-size vector so that texts "
    "with similar meanings end up close together. The model used here is a six-layer "
    "MiniLM encoder with a hidden size of 384, distilled from a larger teacher and then "
    "fine-tuned on more than one billion sentence pairs with a contrastive objective. At "
    "inference time the encoder produces one vector per token; the sentence vector is the "
    "average of the token vectors, weighted by the attention mask so that padding does not "
    "count, and it is finally scaled to unit length so that a dot product is a cosine "
    "similarity. Compiling such a model ahead of time removes the Python interpreter from "
    "the serving path, fuses the small element-wise operations into the matrix "
    "multiplications that surround them, and picks kernel shapes for a fixed set of "
    "sequence-length buckets. None of that may change the answer by more than the "
    "rounding that float32 arithmetic already introduces."
)

def overlong(items):
    return " ".join(
        "Item %d of the overlong list: the tokenizer must cut this text at 256 tokens, "
        "counting the classification and separator tokens." % i for i in range(1, items + 1)
    )


OVERLONG = overlong(20)

# (name, text).  The name goes into the header only; the file stores the text.
SENTENCES = [
    ("example", "This is an example sentence."),
    ("each_sentence", "Each sentence is converted"),
    ("one_word", "Hello"),
    ("single_char", "a"),
    ("empty", ""),
    ("accents", "Héllo, Wörld: naïve café façade, crème brûlée à la française, São Paulo, Ærø."),
    ("cjk", "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다."),
    ("emoji", "I love pizza 🍕🍕 and rockets 🚀! Thumbs up 👍🏽, family 👨‍👩‍👧, flags 🇫🇷🇯🇵."),
    ("arabic", "مرحبا بالعالم، كيف حالك اليوم؟ النص العربي يُكتب من اليمين إلى اليسار."),
    ("scripts", "Привет, мир! Γειά σου κόσμε. नमस्ते दुनिया। שלום עולם. สวัสดีชาวโลก"),
    ("punctuation_runs", "Wait... what?!?! -- (really) [sic] {ok} ***!!!??? ,,,;;; ..."),
    ("whitespace_around", "   \t  padded with whitespace on both sides \n\n  "),
    ("unicode_whitespace", "\u3000\u00a0 ideographic and no-break spaces, a line separator\u2028\x1f "),
    ("numbers_urls", "Visit https://example.com/path?q=1&x=2#frag or mail ops@example.org; "
     "call +1 (555) 123-4567 before 2024-03-15T09:30Z; pi ≈ 3.14159, 1,000,000 and 42%."),
    ("mixed_case", "The QUICK Brown FoX jumps over the LaZy DOG"),
    ("long_words", "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis "
     "supercalifragilisticexpialidocious"),
    ("zero_width", "zero\u200bwidth joiner\u200d soft\u00adhyphen and combining e\u0301 accents"),
    ("question", "How do I compile a BERT encoder for my GPU?"),
    ("paraphrase", "A man is eating a piece of bread."),
    ("long_about_200_tokens", LONG_PARAGRAPH),
    ("overlong_truncated", OVERLONG),
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_modules(model, text):
    """Token ids, Pooling output and final embedding, module by module."""
    features = model.tokenize([text])
    with torch.no_grad():
        out = model[0](dict(features))
        out = model[1](out)
        pooled = out["sentence_embedding"].detach().clone()
        out = model[2](out)
        emb = out["sentence_embedding"].detach().clone()
    ids = features["input_ids"][0].tolist()
    assert features["attention_mask"][0].tolist() == [1] * len(ids)
    return ids, pooled[0].numpy(), emb[0].numpy()


def build():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = SentenceTransformer(MODEL_DIR, device="cpu")
    model.eval()
    model = model.float()
    names = [type(m).__name__ for m in model]
    if names != ["Transformer", "Pooling", "Normalize"]:
        raise AssertionError("unexpected modules %r" % names)
    pool_cfg = model[1].get_config_dict()
    if not pool_cfg.get("pooling_mode_mean_tokens") or any(
            v for k, v in pool_cfg.items() if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"):
        raise AssertionError("pooling is not plain mean pooling: %r" % pool_cfg)
    if model[0].do_lower_case:
        raise AssertionError("sentence-transformers lower-cases by itself; not modelled")
    max_seq = model.max_seq_length
    model64 = copy.deepcopy(model).double()
    tok = model.tokenizer
    dim = model.get_sentence_embedding_dimension()

    lines = [
        "producer: tools/make_sentence_goldens.py",
        "format: BSEN 1",
        "python: %s" % platform.python_version(),
        "torch: %s" % torch.__version__,
        "transformers: %s" % transformers.__version__,
        "tokenizers: %s" % tokenizers.__version__,
        "sentence_transformers: %s" % sentence_transformers.__version__,
        "numpy: %s" % np.__version__,
        "model: %s" % MODEL,
        "model_sha256: %s" % sha256_file(os.path.join(MODEL_DIR, "model.safetensors")),
        "modules: Transformer -> Pooling(mean over attention mask) -> Normalize(L2)",
        "max_seq_length: %d" % max_seq,
        "dim: %d" % dim,
        "compute: SentenceTransformer.encode float32, one sentence per call, CPU, 1 thread",
        "ids: SentenceTransformer.tokenize (str.strip, %s, truncation to max_seq_length)" % type(tok).__name__,
    ]
    body = []
    worst = [0.0, 0.0]
    n_trunc = 0
    for idx, (name, text) in enumerate(SENTENCES):
        ids, pooled, emb = run_modules(model, text)
        enc = model.encode([text], batch_size=1, convert_to_numpy=True, show_progress_bar=False)
        if enc.dtype != np.float32 or enc.shape != (1, dim):
            raise AssertionError("%s: encode gave %s %r" % (name, enc.dtype, enc.shape))
        if not np.array_equal(enc[0], emb):
            raise AssertionError("%s: encode() differs from the module-by-module result" % name)
        if not (np.all(np.isfinite(pooled)) and np.all(np.isfinite(emb))):
            raise AssertionError("%s: non-finite output" % name)
        direct = tok(text.strip(), truncation=True, max_length=max_seq)["input_ids"]
        if direct != ids:
            raise AssertionError("%s: tokenize() ids differ from the tokenizer's" % name)
        full = len(tok(text.strip())["input_ids"])
        truncated = full > max_seq
        if truncated:
            n_trunc += 1
            assert len(ids) == max_seq
        _, pooled64, emb64 = run_modules(model64, text)
        d_emb = float(np.max(np.abs(emb.astype(np.float64) - emb64)))
        d_pool = float(np.max(np.abs(pooled.astype(np.float64) - pooled64)))
        worst = [max(worst[0], d_emb), max(worst[1], d_pool)]
        print("  %2d %-22s ids %3d%s |pooled| %.4f fp64 diff emb %.2e pooled %.2e" % (
            idx, name, len(ids), " (of %d)" % full if truncated else "",
            float(np.linalg.norm(pooled.astype(np.float64))), d_emb, d_pool))
        lines.append("case %d %s: n_ids=%d untruncated_ids=%d fp64_max_abs_diff_embedding=%.3e "
                     "fp64_max_abs_diff_mean_pooled=%.3e" % (idx, name, len(ids), full, d_emb, d_pool))
        lines.append("case %d text: %s" % (idx, json.dumps(text, ensure_ascii=False)))
        t = text.encode("utf-8")
        body.append(b"".join([
            struct.pack("<I", len(t)), t,
            struct.pack("<I", len(ids)), np.asarray(ids, dtype="<i4").tobytes(),
            struct.pack("<I", dim),
            np.ascontiguousarray(pooled, dtype="<f4").tobytes(),
            np.ascontiguousarray(emb, dtype="<f4").tobytes()]))
    if n_trunc == 0:
        raise AssertionError("no sentence exceeds max_seq_length")
    lines.insert(lines.index("dim: %d" % dim) + 1,
                 "fp64_max_abs_diff: embedding %.3e mean_pooled %.3e (max over cases)" % tuple(worst))
    header = ("\n".join(lines) + "\n").encode("utf-8")
    return b"".join([MAGIC, struct.pack("<II", VERSION, len(header)), header,
                     struct.pack("<I", len(body))] + body)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed file, write nothing")
    ap.add_argument("--model", default=MODELS[0], choices=MODELS)
    args = ap.parse_args(argv)
    select_model(args.model)
    if args.model == "all-mpnet-base-v2":  # max_seq_length 384: a longer text to cut
        SENTENCES[-1] = ("overlong_truncated", overlong(30))
    if not os.path.exists(os.path.join(MODEL_DIR, "model.safetensors")):
        print("make_sentence_goldens: %s missing; run: make build/hf/%s/model.safetensors" % (MODEL_DIR, MODEL),
              file=sys.stderr)
        return 2
    blob = build()
    if args.check:
        with open(OUT, "rb") as f:
            same = f.read() == blob
        print("%s: %s" % (os.path.relpath(OUT, ROOT), "identical" if same else "DIFFERS"))
        return 0 if same else 1
    tmp = OUT + ".tmp.%d" % os.getpid()
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, OUT)
    print("wrote %s (%d bytes, md5 %s)" % (os.path.relpath(OUT, ROOT), len(blob), hashlib.md5(blob).hexdigest()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
