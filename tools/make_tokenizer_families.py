#!/usr/bin/env python3
"""make_tokenizer_families.py — byte-level BPE and Unigram tokenizers and
the expected Hugging Face encodings for tests/runtime/test_tokenizer_families.c.

Truth is what transformers' AutoTokenizer loads (the fast tokenizers, the
Rust `tokenizers` pipeline).  The script writes, deterministically with the
pinned versions below (the trainers are run once; --retrain replaces them):

  tests/golden/tokenizer-train.txt       the multilingual training text
  tests/golden/tok-roberta/              byte-level BPE trained by tokenizers'
                                         BpeTrainer, RoBERTa's pipeline
                                         (ByteLevel, RobertaProcessing, <mask>
                                         lstrip): tokenizer.json + config
  tests/golden/tok-roberta-files/        the same as vocab.json + merges.txt
  tests/golden/tok-unigram/              Unigram trained by UnigramTrainer, with
                                         Replace (literal and " {2,}"), Strip,
                                         Metaspace and XLM-R's template
  tests/golden/tok-xlmr/                 a SentencePiece Unigram (nmt_nfkc)
                                         trained by sentencepiece and converted
                                         by transformers' XLMRobertaTokenizerFast:
                                         Precompiled charsmap, Metaspace
  tests/golden/tokenizer-families.btk2   cases (the WordPiece corpus's
                                         generator plus byte-level edge cases)
                                         and, per tokenizer, ids, token types
                                         and byte offsets
  tests/golden/tokenizer-families-sweep.bin  every code point c as "A" c "b"
                                         through each tokenizer (no specials):
                                         FNV-1a-64 of ids and byte offsets per
                                         block of 256 code points

With --mpnet DIR (tools/fetch_mpnet.sh) it also writes
tests/golden/tokenizer-mpnet.btk2: the same cases through
all-mpnet-base-v2's own tokenizer; with --gpt2 DIR
(tools/fetch_gpt2_bpe.sh) tests/golden/tokenizer-gpt2.btk2: through GPT-2's
real byte-level BPE (50,000 merges) as RobertaTokenizerFast builds it from
vocab.json + merges.txt.

Usage:  python3 -m venv V && V/bin/pip install tokenizers==0.21.1 transformers==4.51.3 \\
            sentencepiece==0.2.3 protobuf
        V/bin/python tools/make_tokenizer_families.py [--retrain] [--mpnet build/hf/all-mpnet-base-v2]

Formats (little-endian) are in docs/testing.md.
"""
import argparse
import json
import os
import random
import shutil
import struct
import sys

os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tokenizers  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
import make_tokenizer_goldens as wp  # noqa: E402

PINNED = {"tokenizers": "0.21.1", "transformers": "4.51.3", "sentencepiece": "0.2.3"}
SEED = 20261124
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
GOLDEN = "tests/golden"
NAMES = ["tok-roberta", "tok-roberta-files", "tok-unigram", "tok-xlmr", "tok-var-unigram", "tok-var-bpe",
         "tok-var-bpe-unk"]


def train_text(path):
    r = random.Random(SEED)
    # No NUL: a vocabulary entry holding one cannot be carried (docs/tokenizer.md).
    lines = [wp.rand_line(r, 1, 20).replace("\x00", "") for _ in range(1500)]
    lines += [" ".join(wp.EN + wp.ACCENT + wp.CJK + wp.SCRIPTS)] * 20
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line.replace("\n", " ").replace("\r", " ").replace("\u2028", " ").replace("\u2029", " ")
                    .replace("\x85", " ").replace("\x0b", " ").replace("\x0c", " ").replace("\x1c", " ")
                    .replace("\x1d", " ").replace("\x1e", " ") + "\n")


def read_lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n") for line in f]


def config(dirname, cfg):
    with open(os.path.join(dirname, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.write("\n")


def train_roberta(lines, out, out_files):
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = tokenizers.decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=3000, min_frequency=2, show_progress=False,
                             special_tokens=SPECIALS + [AddedToken("<mask>", lstrip=True, normalized=False)],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t.train_from_iterator(lines, tr)
    t.post_processor = processors.RobertaProcessing(("</s>", t.token_to_id("</s>")), ("<s>", t.token_to_id("<s>")),
                                                    trim_offsets=True, add_prefix_space=False)
    for d in (out, out_files):
        os.makedirs(d, exist_ok=True)
    t.save(os.path.join(out, "tokenizer.json"))
    t.model.save(out_files)
    cfg = {"tokenizer_class": "RobertaTokenizer", "model_max_length": 512, "add_prefix_space": False,
           "trim_offsets": True, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
           "cls_token": "<s>", "pad_token": "<pad>", "mask_token": "<mask>"}
    config(out, cfg)
    config(out_files, cfg)


def train_unigram(lines, out):
    t = Tokenizer(models.Unigram())
    t.normalizer = normalizers.Sequence([normalizers.Replace("``", '"'), normalizers.Replace("''", '"'),
                                         normalizers.Strip(left=False, right=True),
                                         normalizers.Replace(Regex(" {2,}"), " ")])
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tr = trainers.UnigramTrainer(vocab_size=3000, show_progress=False, unk_token="<unk>",
                                 special_tokens=SPECIALS + ["<mask>"], max_piece_length=12)
    t.train_from_iterator(lines, tr)
    t.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", t.token_to_id("<s>")), ("</s>", t.token_to_id("</s>"))])
    os.makedirs(out, exist_ok=True)
    t.save(os.path.join(out, "tokenizer.json"))
    config(out, {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512, "bos_token": "<s>",
                 "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"})


def train_xlmr(train_path, out):
    import sentencepiece as spm
    from transformers import XLMRobertaTokenizerFast
    tmp = out + ".spm"
    spm.SentencePieceTrainer.train(input=train_path, model_prefix=tmp, model_type="unigram", vocab_size=2500,
                                   normalization_rule_name="nmt_nfkc", character_coverage=0.9995, seed_sentencepiece_size=100000,
                                   num_threads=1, minloglevel=2, byte_fallback=False)
    tok = XLMRobertaTokenizerFast(vocab_file=tmp + ".model")
    os.makedirs(out, exist_ok=True)
    tok.save_pretrained(out)
    for f in ("sentencepiece.bpe.model", "special_tokens_map.json"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    for f in (tmp + ".model", tmp + ".vocab"):
        os.remove(f)


def variants(dirs):
    """Options the trained tokenizers leave out, as edits of their tokenizer.json (class PreTrainedTokenizerFast):
    tok-var-unigram: byte_fallback with <0xXX> pieces, Metaspace prepend_scheme "first" without split,
                     Lowercase + Strip;
    tok-var-bpe:     BPE over WhitespaceSplit + Metaspace (not byte-level), byte_fallback, <unk> fused,
                     BertProcessing;
    tok-var-bpe-unk: the same without byte_fallback, unknowns not fused, ignore_merges."""
    with open(os.path.join(dirs[2], "tokenizer.json"), encoding="utf-8") as f:
        v = json.load(f)
    v["model"]["byte_fallback"] = True
    v["model"]["vocab"] += [["<0x%02X>" % b, -20.0] for b in range(256)]
    v["pre_tokenizer"].update(prepend_scheme="first", split=False)
    v["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Lowercase"},
                                                           {"type": "Strip", "strip_left": True, "strip_right": True}]}
    with open(os.path.join(dirs[0], "tokenizer.json"), encoding="utf-8") as f:
        b = json.load(f)
    b["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}]}
    b["model"].update(byte_fallback=True, unk_token="<unk>", fuse_unk=True)
    n = len(b["model"]["vocab"])
    for k in range(256):
        b["model"]["vocab"]["<0x%02X>" % k] = n + k
    b["model"]["vocab"]["\u2581"] = n + 256
    b["post_processor"] = {"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}
    c = json.loads(json.dumps(b))
    c["model"].update(byte_fallback=False, fuse_unk=False, ignore_merges=True)
    for name, j in (("tok-var-unigram", v), ("tok-var-bpe", b), ("tok-var-bpe-unk", c)):
        d = os.path.join(GOLDEN, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
        config(d, {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512})


# ---------------------------------------------------------------- cases

def edge_cases():
    """Byte-level and Unigram edge cases: (text, pair or None, max_len or -1)."""
    c = [(chr(b), None, -1) for b in range(256)]
    c.append(("".join(chr(b) for b in range(1, 256)), None, -1))
    for n in (1, 2, 3, 10, 100, 600):
        c += [(" " * n + "x", None, -1), ("x" + " " * n, None, -1), ("a" + " " * n + "b", None, -1)]
    c += [("\n" * 50, None, -1), (" \n \n  x  \n", None, -1), ("\t \t", None, -1), ("\r\n\r\n x", None, -1),
          ("x \u00a0 y\u3000 z", None, -1), (" " * 5, "\n" * 5, -1)]
    c += [(s, None, -1) for s in ["don't", "'s", "'S", "x's 're 've 'm 'll 'd", "'''", "I'll'll", "O'Neil's",
                                  "it 's", "''" "``quoted''", "``", "a``b''c"]]
    c += [(s, None, -1) for s in ["👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈🇫🇷", "😀" * 40, "👍🏽👍🏿", "1️⃣#️⃣",
                                  "e\u0301\u0302\u0303", "Ａ\u0301", "ｶﾞ", "①②③", "ﬁﬂ", "㍻", "…", "™",
                                  "abcабв中文😀١٢٣", "Ελληνικά русский हिन्दी 日本語 العربية"]]
    c += [(s, None, -1) for s in ["<mask>", " <mask>", "a <mask> b", "<s></s>", "x<mask>y", "  <mask>  ",
                                  "é <mask>", "日 <mask>", "<unk>", "<pad>x", "<s> hello </s>", "<MASK>", "<mask",
                                  "[CLS] [SEP] [MASK]", "\t<mask>\n"]]
    c += [(s, None, -1) for s in ["1234567890", "3.14159", "١٢٣٤", "1,000,000", "x" * 300, "é" * 200,
                                  "\U0010FFFF\U000E0001\uFFFD\uFEFF\u200B", "\x00\x01\x7f", "Hello, world!"]]
    c += [("one two three four five six", "seven eight nine", m) for m in (4, 5, 7, 9, 12)]
    return c


def corpus_cases(path):
    """The cases of the WordPiece corpus (tokenizer-corpus.btok): its texts are reused, not stored again."""
    with open(path, "rb") as f:
        b = f.read()
    assert b[:4] == b"BTOK"
    hl = struct.unpack_from("<I", b, 8)[0]
    p = 12 + hl
    nvocab, ncases = struct.unpack_from("<II", b, p)
    p += 8
    for _ in range(nvocab):
        n = struct.unpack_from("<I", b, p)[0]
        p += 4 + n + 3
    out = []
    for _ in range(ncases):
        ml, hp, n = struct.unpack_from("<iBI", b, p)
        p += 9
        text = b[p:p + n].decode()
        p += n
        pair = None
        if hp:
            n = struct.unpack_from("<I", b, p)[0]
            pair = b[p + 4:p + 4 + n].decode()
            p += 4 + n
        for _ in range(nvocab):
            n = struct.unpack_from("<I", b, p)[0]
            p += 4 + 3 * n
        out.append((text, pair, ml))
    assert p == len(b)
    return out


def byte_offsets(s):
    out = [0]
    for ch in s:
        out.append(out[-1] + len(ch.encode("utf-8")))
    return out


def encode(tok, text, pair, max_len):
    kw = {"truncation": True, "max_length": max_len} if max_len > 0 else {"truncation": False}
    e = tok(text, pair, return_offsets_mapping=True, return_token_type_ids=True, add_special_tokens=True, **kw)
    seq = e.sequence_ids()
    bo = [byte_offsets(text), byte_offsets(pair) if pair else [0]]
    toks = []
    for i, (a, b) in enumerate(e["offset_mapping"]):
        s = seq[i]
        if s is None:
            toks.append((e["input_ids"][i], e["token_type_ids"][i], 255, 0, 0))
        else:
            toks.append((e["input_ids"][i], e["token_type_ids"][i], s, bo[s][a], bo[s][b]))
    return toks


def load(dirname):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(dirname)


def pack_tokens(enc):
    return b"".join(struct.pack("<iBBII", *x) for x in enc)


def write_golden(path, names, toks, extra_header):
    """Corpus cases: a hash per tokenizer; edge cases: their texts and every token."""
    import hashlib
    corpus, edges = corpus_cases(os.path.join(GOLDEN, "tokenizer-corpus.btok")), edge_cases()
    head = ["producer: tools/make_tokenizer_families.py"]
    head += ["%s: %s" % (k, v) for k, v in sorted(PINNED.items())]
    head += ["python: %s" % sys.version.split()[0]] + extra_header
    hb = ("\n".join(head) + "\n").encode()
    out = [b"BTK2", struct.pack("<II", 1, len(hb)), hb, struct.pack("<I", len(names))]
    for n in names:
        out.append(struct.pack("<I", len(n.encode())) + n.encode())
    out.append(struct.pack("<I", len(corpus)))
    for text, pair, ml in corpus:
        for t in toks:
            out.append(hashlib.sha256(pack_tokens(encode(t, text, pair, ml))).digest()[:8])
    out.append(struct.pack("<I", len(edges)))
    for text, pair, ml in edges:
        tb = text.encode()
        out.append(struct.pack("<iBI", ml, 1 if pair is not None else 0, len(tb)) + tb)
        if pair is not None:
            pb = pair.encode()
            out.append(struct.pack("<I", len(pb)) + pb)
        for t in toks:
            enc = encode(t, text, pair, ml)
            out.append(struct.pack("<I", len(enc)) + pack_tokens(enc))
    with open(path, "wb") as f:
        f.write(b"".join(out))


def show(dirname, k):
    """Prints HF's tokens for corpus case k (the C test names failing cases by number)."""
    text, pair, ml = corpus_cases(os.path.join(GOLDEN, "tokenizer-corpus.btok"))[k]
    t = load(dirname)
    print(repr(text), repr(pair), ml)
    for x in encode(t, text, pair, ml):
        print(x, repr(t.convert_ids_to_tokens(x[0])))


# ---------------------------------------------------------------- sweep

def sweep(tok):
    """Per block of 256 code points: the first 8 bytes of SHA-256 over each "A" c "b"'s tokens."""
    import hashlib
    backend = tok.backend_tokenizer
    # transformers leaves the last call's truncation switched on in the backend.
    backend.no_truncation()
    backend.no_padding()
    hashes = []
    for blk in range(0x110000 // 256):
        cps = [c for c in range(blk * 256, blk * 256 + 256) if not 0xD800 <= c <= 0xDFFF]
        texts = ["A" + chr(c) + "b" for c in cps]
        h = hashlib.sha256()
        for text, e in zip(texts, backend.encode_batch(texts, add_special_tokens=False)):
            bo = byte_offsets(text)
            h.update(b"".join(struct.pack("<iII", i, bo[a], bo[b]) for i, (a, b) in zip(e.ids, e.offsets)) + b"\n")
        hashes.append(h.digest()[:8])
    return hashes


def write_sweep(path, names, toks):
    out = [b"BSW2", struct.pack("<III", 1, len(names), 0x110000 // 256)]
    for n, t in zip(names, toks):
        out.append(struct.pack("<I", len(n.encode())) + n.encode())
        out.extend(sweep(t))
    with open(path, "wb") as f:
        f.write(b"".join(out))


# ---------------------------------------------------------------- the command line's goldens

CLI_TEXTS = [("Hello world, it's <mask> time!", None), ("  Naïve café — 中文 😀 x", "second  text\there"),
             ("``quoted'' and  spaced", None), ("Ａ１ ﬁ ①", "x <mask> y")]


def write_cli(toks):
    """tests/golden/tokenizer-cli.json: what `bertc tokenize --json --offsets` must print for a few texts."""
    out = {}
    for n, t in zip(NAMES[:4], toks):
        cases = []
        for text, pair in CLI_TEXTS:
            enc = encode(t, text, pair, -1)
            cases.append({"text": text, "pair": pair, "ids": [x[0] for x in enc], "type_ids": [x[1] for x in enc],
                          "offsets": [[x[3], x[4]] for x in enc],
                          "sequence_ids": [-1 if x[2] == 255 else x[2] for x in enc]})
        out[n] = cases
    with open(os.path.join(GOLDEN, "tokenizer-cli.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0, sort_keys=True)
        f.write("\n")


# ---------------------------------------------------------------- fuzz seeds

def fuzz_seeds():
    """Small tokenizer.json seeds for tests/fuzz (fuzz_tokenizer, fuzz_json): a byte-level BPE and a
    SentencePiece Unigram whose Precompiled map holds three rules, both trained on a few lines."""
    import sentencepiece as spm
    import tempfile
    from transformers import XLMRobertaTokenizerFast
    lines = read_lines(os.path.join(GOLDEN, "tokenizer-train.txt"))[:40]
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=300, show_progress=False, special_tokens=SPECIALS + [
        AddedToken("<mask>", lstrip=True, normalized=False)], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    t.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    bpe = t.to_str()
    with tempfile.TemporaryDirectory() as d:
        rules = os.path.join(d, "rules.tsv")
        with open(rules, "w") as f:
            f.write("41\t61\nFF21\t41\n3000\t20\n")
        with open(os.path.join(d, "t.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        spm.SentencePieceTrainer.train(input=os.path.join(d, "t.txt"), model_prefix=os.path.join(d, "m"),
                                       model_type="unigram", vocab_size=500, normalization_rule_tsv=rules, character_coverage=0.98,
                                       num_threads=1, minloglevel=2, hard_vocab_limit=False)
        XLMRobertaTokenizerFast(vocab_file=os.path.join(d, "m.model")).save_pretrained(d)
        with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
            uni = json.dumps(json.load(f), ensure_ascii=False, separators=(",", ":"))
    text = "Hello, wörld!  Ａ<mask>x 中文 😀\u3000's\n"
    out = {"fuzz_tokenizer/json_bpe.bin": b"\x02" + bpe.encode() + b"\x00" + text.encode(),
           "fuzz_tokenizer/json_unigram.bin": b"\x02" + uni.encode() + b"\x00" + text.encode(),
           "fuzz_tokenizer/trained_charsmap.bin": b"\x03\x06" + bytes(range(1, 64)) + b"\x00" + text.encode(),
           "fuzz_tokenizer/trained_merges.bin": b"\x03\x08" + bytes(range(1, 64)) + b"\x00" + text.encode(),
           "fuzz_tokenizer/trained_added.bin": b"\x03\x0d\x1f\x02\x00" + text.encode(),
           "fuzz_json/tokenizer_bpe.json": bpe.encode(), "fuzz_json/tokenizer_unigram.json": uni.encode()}
    for name, data in out.items():
        with open(os.path.join("tests/fuzz/corpus", name), "wb") as f:
            f.write(data)
        print("wrote tests/fuzz/corpus/%s (%d bytes)" % (name, len(data)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--retrain", action="store_true", help="train the tokenizers again")
    ap.add_argument("--mpnet", help="all-mpnet-base-v2 directory (tools/fetch_mpnet.sh)")
    ap.add_argument("--gpt2", help="GPT-2's vocab.json + merges.txt as RoBERTa (tools/fetch_gpt2_bpe.sh)")
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--fuzz-seeds", action="store_true", help="write the fuzz targets' tokenizer seeds")
    ap.add_argument("--show", nargs=2, metavar=("DIR", "CASE"), help="print HF's tokens for a corpus case")
    a = ap.parse_args()
    import transformers
    for mod, v in (("tokenizers", tokenizers.__version__), ("transformers", transformers.__version__)):
        if v != PINNED[mod]:
            print("warning: %s %s, the goldens were made with %s" % (mod, v, PINNED[mod]), file=sys.stderr)
    train = os.path.join(GOLDEN, "tokenizer-train.txt")
    dirs = [os.path.join(GOLDEN, n) for n in NAMES]
    if a.retrain or not all(os.path.isdir(d) for d in dirs[:4]):
        train_text(train)
        lines = read_lines(train)
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
        train_roberta(lines, dirs[0], dirs[1])
        train_unigram(lines, dirs[2])
        train_xlmr(train, dirs[3])
        variants(dirs)
    if a.fuzz_seeds:
        fuzz_seeds()
        return
    if a.show is not None:
        show(a.show[0], int(a.show[1]))
        return
    if not all(os.path.isdir(d) for d in dirs[4:]):
        variants(dirs)
    toks = [load(d) for d in dirs]
    write_cli(toks)
    write_golden(os.path.join(GOLDEN, "tokenizer-families.btk2"), NAMES, toks,
                 ["class %s: %s" % (n, type(t).__name__) for n, t in zip(NAMES, toks)])
    if not a.no_sweep:
        write_sweep(os.path.join(GOLDEN, "tokenizer-families-sweep.bin"), NAMES, toks)
    if a.mpnet:
        t = load(a.mpnet)
        write_golden(os.path.join(GOLDEN, "tokenizer-mpnet.btk2"), ["all-mpnet-base-v2"], [t],
                     ["class: %s" % type(t).__name__])
    if a.gpt2:
        t = load(a.gpt2)
        write_golden(os.path.join(GOLDEN, "tokenizer-gpt2.btk2"), ["gpt2-bpe"], [t],
                     ["class: %s" % type(t).__name__])
    print("wrote the goldens for %s" % ", ".join(NAMES))


if __name__ == "__main__":
    main()
