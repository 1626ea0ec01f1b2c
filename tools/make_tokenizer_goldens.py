#!/usr/bin/env python3
"""make_tokenizer_goldens.py — expected Hugging Face tokenizations for
tests/runtime/test_tokenizer.c.

Truth is transformers' BertTokenizerFast (the Rust `tokenizers` pipeline).
The script writes, deterministically (seeded; the same bytes on every run
with the pinned versions below):

  tests/golden/tokenizer-cased-vocab.txt   a small CASED WordPiece vocabulary,
                                           trained here by the tokenizers
                                           WordPiece trainer on generated text
  tests/golden/tokenizer-corpus.btok       the corpus (several thousand single
                                           texts, pairs, truncated cases) and
                                           the expected ids and token types for
                                           two vocabularies: all-MiniLM-L6-v2's
                                           (uncased) and the cased one above
  tests/golden/tokenizer-sweep.bin         every code point through HF's
                                           normaliser + pre-tokenizer under four
                                           settings, hashed per block of 256

It also cross-checks a sample against the slow Python BertTokenizer and
prints where the two HF implementations disagree (see docs/tokenizer.md).

The WordPiece trainer is not deterministic across runs (it breaks ties in
Rust HashMap order), so an existing tokenizer-cased-vocab.txt is reused and
only --retrain-vocab trains a new one; everything else is deterministic.

Usage:  python3 -m venv V && V/bin/pip install tokenizers==0.21.1 transformers==4.51.3
        make build/hf/all-MiniLM-L6-v2/model.safetensors
        V/bin/python tools/make_tokenizer_goldens.py [--minilm DIR] [--out tests/golden]
        V/bin/python tools/make_tokenizer_goldens.py --tables   # print tokenizer.c's hf_* tables

File formats (little-endian) are described in docs/tokenizer.md.
"""
import argparse
import ctypes
import ctypes.util
import os
import random
import struct
import sys
import tempfile
import unicodedata

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import tokenizers  # noqa: E402
from tokenizers import normalizers, pre_tokenizers  # noqa: E402

PINNED = {"tokenizers": "0.21.1", "transformers": "4.51.3"}
SEED = 20240611
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# ---------------------------------------------------------------- corpus

EN = ("the quick brown fox jumps over lazy dog tokenizer model encoder attention layer "
      "unbelievable internationalization preprocessing hello world running runner ran "
      "data science network weights bias vocabulary sentence pair truncate longest first "
      "John Smith New York London Paris Berlin Tokyo GPU CUDA NVIDIA BERT Hugging Face "
      "I'm don't can't won't it's they're you'll O'Neil rock'n'roll e-mail co-operate").split()
ACCENT = ("café naïve résumé Ångström São Paulo Müller Zürich Ünïcödé façade jalapeño "
          "crème brûlée Dvořák Łódź İstanbul ıi Straße ΟΔΟΣ Σίσυφος ǅemal Ǆ ﬁnance "
          "ΚΑΛΗΜΈΡΑ Привет Ёлка Čeština Ελληνικά Ωmega K Å ẞ ǰ ΐ ſt").split()
CJK = ["中文分词测试", "日本語のテキストです", "한국어 텍스트", "漢字かな交じり文", "繁體中文與简体中文",
       "豈更車賈", "𠀀𠀁𪜀", "\U0002B820\U0002B8FF\U0002B920", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ", "カタカナ"]
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷🇯🇵", "❤️", "🫠", "🫨", "🥰", "☃", "✈︎", "🏳️\u200d🌈", "1️⃣"]
SCRIPTS = ["مرحبا بالعالم", "السَّلَامُ عَلَيْكُمْ", "हिन्दी भाषा", "नमस्ते दुनिया", "ภาษาไทย สวัสดีครับ",
           "שָׁלוֹם עוֹלָם", "Ἀθῆναι", "ᏣᎳᎩ", "ᜑᜈᜓ\u1734", "\u0890\u08e2 ࣢", "தமிழ்", "বাংলা", "ქართული",
           "Հայերեն", "አማርኛ", "ᠮᠣᠩᠭᠣᠯ\u180e", "\U00011935\U00011930\U00011938"]
PUNCT = ["!!!", "...", "?!", "—", "–", "«»", "“quoted”", "‘x’", "¿¡", "()[]{}", "<tag>", "@#$%^&*",
         "a/b\\c", "~`|", "…", "·", "§¶", "†‡", "※", "⁂", "\u2e43\u2e5d", "\u061d", "\u166d", "\u1b7d"]
CONTROL = ["\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\u200e", "\u202e", "\ufeff", "\ufffd",
           "\u0600", "\U000e0001", "\ue000", "\U000f0000", "\u0378", "\U0001fafa", "\U000e01ef", "\x0b", "\x0c"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\u034f", "\u180b"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u2029", "\u2002", "\u202f",
          "\u1680", " \t \n "]
COMBINING = ["e\u0301", "a\u0301\u0316", "a\u0316\u0301", "o\u0308\u0304", "n\u0303", "A\u030a",
             "\u0301", "x\u20dd", "\u0488", "i\u0307", "\u1dfa", "k\u0331\u0301"]
SPECIAL_LIT = ["[SEP]", "[CLS]", "[MASK]", "[UNK]", "[PAD]", "[sep]", "[SEP", "[[SEP]]", "x[SEP]y", "[MASK][MASK]"]


def rand_word(r, lo, hi, alphabet="abcdefghijklmnopqrstuvwxyz"):
    return "".join(r.choice(alphabet) for _ in range(r.randint(lo, hi)))


def rand_number(r):
    return r.choice([str(r.randint(0, 10 ** r.randint(1, 12))), "%.5f" % r.uniform(-1e4, 1e4),
                     "{:,}".format(r.randint(1000, 10 ** 9)), "%04d-%02d-%02d" % (r.randint(1900, 2100),
                     r.randint(1, 12), r.randint(1, 28)), "1e-9", "½ ² ⅞ ٣ ४ ௮", "12:30pm", "+1 (555) 010-9999"])


def rand_url(r):
    return r.choice(["https://example.com/path/to/page?q=%d&x=y#frag" % r.randint(0, 999),
                     "http://www.hugging-face.co/models/bert-base-uncased", "ftp://files.example.org/a_b-c.tar.gz",
                     "user.name+tag@example.co.uk", "www.test.com/~user/index.html", "C:\\Program Files\\x.exe"])


def rand_cp(r):
    while True:
        c = r.choice([r.randint(0x20, 0x7e), r.randint(0xa0, 0x2fff), r.randint(0x3000, 0xffff),
                      r.randint(0x10000, 0x10ffff), r.randint(0x1f000, 0x1faff), r.randint(0x300, 0x36f)])
        if not 0xd800 <= c <= 0xdfff:
            return chr(c)


def rand_piece(r):
    k = r.random()
    if k < 0.35:
        return r.choice(EN)
    if k < 0.45:
        return r.choice(ACCENT)
    if k < 0.50:
        return r.choice(CJK)
    if k < 0.54:
        return r.choice(EMOJI)
    if k < 0.60:
        return r.choice(SCRIPTS)
    if k < 0.66:
        return r.choice(PUNCT)
    if k < 0.70:
        return r.choice(EN) + r.choice(CONTROL) + r.choice(EN)
    if k < 0.74:
        return r.choice(EN) + r.choice(ZERO_WIDTH) + r.choice(EN)
    if k < 0.78:
        return rand_number(r)
    if k < 0.81:
        return rand_url(r)
    if k < 0.84:
        return r.choice(COMBINING)
    if k < 0.86:
        return r.choice(SPECIAL_LIT)
    if k < 0.88:
        return "".join(rand_cp(r) for _ in range(r.randint(1, 6)))
    if k < 0.90:
        return rand_word(r, 95, 105)
    if k < 0.91:
        return rand_word(r, 101, 160, "abcdefghijklmnopqrstuvwxyzABCDEFG0123456789")
    if k < 0.92:
        return rand_word(r, 98, 102, "éàüøßñçÅΣ中")
    return r.choice(EN).upper() if r.random() < 0.5 else r.choice(EN).capitalize()


def rand_line(r, lo=1, hi=25):
    parts = []
    for _ in range(r.randint(lo, hi)):
        parts.append(rand_piece(r))
        parts.append(r.choice(SPACES) if r.random() < 0.3 else ("" if r.random() < 0.1 else " "))
    s = "".join(parts)
    if r.random() < 0.1:
        s = r.choice(SPACES) + s + r.choice(SPACES)
    return s


def make_cases(r):
    """(text, pair or None, max_len or -1) tuples."""
    cases = [("", None, -1), (" ", None, -1), ("\t\n\r", None, -1), ("\x00", None, -1), ("", "", -1),
             ("hello", "", -1), ("", "world", -1), ("[SEP]", None, -1), ("a" * 100, None, -1),
             ("a" * 101, None, -1), ("é" * 100, None, -1), ("é" * 101, None, -1),
             ("hello world", None, 2), ("hello world", None, 3), ("hello world", "x", 3),
             ("one two three four five", "six seven eight nine ten", 12),
             ("one two", "six seven eight nine ten", 6), ("one two three four five", "six", 5)]
    for _ in range(2500):
        cases.append((rand_line(r, 1, 16), None, -1))
    for _ in range(200):
        cases.append(("" if r.random() < 0.3 else r.choice(SPACES + CONTROL + ZERO_WIDTH), None, -1))
    for _ in range(800):
        cases.append((rand_line(r, 1, 8), rand_line(r, 1, 8), -1))
    for _ in range(300):
        cases.append((rand_line(r, 1, 40), None, r.randint(2, 48)))
    for _ in range(500):
        cases.append((rand_line(r, 1, 25), rand_line(r, 1, 25), r.randint(3, 48)))
    for _ in range(10):   # longer than model_max_length: truncated to 512 or a random budget
        cases.append((rand_line(r, 200, 300), None, r.choice([512, 128, r.randint(2, 600)])))
    for _ in range(8):
        cases.append((rand_line(r, 100, 200), rand_line(r, 50, 200), r.choice([512, 256, r.randint(3, 600)])))
    return cases


# ---------------------------------------------------------------- vocabularies

def train_cased_vocab(path):
    r = random.Random(SEED + 1)
    lines = [rand_line(r) for _ in range(20000)]
    lines += [" ".join(EN + ACCENT + CJK + SCRIPTS)] * 50
    t = tokenizers.BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=False,
                                          lowercase=False)
    t.train_from_iterator(lines, vocab_size=4000, min_frequency=3, limit_alphabet=600,
                          special_tokens=SPECIALS, show_progress=False, wordpieces_prefix="##")
    vocab = sorted(t.get_vocab().items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for tok, _ in vocab:
            f.write(tok + "\n")
    return len(vocab)


def load_tokenizers(minilm, cased_vocab):
    from transformers import AutoTokenizer, BertTokenizer, BertTokenizerFast
    unc = AutoTokenizer.from_pretrained(minilm)
    assert type(unc).__name__ == "BertTokenizerFast", type(unc)
    cas = BertTokenizerFast(vocab_file=cased_vocab, do_lower_case=False, tokenize_chinese_chars=True,
                            strip_accents=None)
    unc_slow = BertTokenizer.from_pretrained(minilm)
    cas_slow = BertTokenizer(vocab_file=cased_vocab, do_lower_case=False, tokenize_chinese_chars=True,
                             strip_accents=None)
    # The same pipeline built from vocab.txt and the settings alone, as a plan carries them.
    unc_plain = BertTokenizerFast(vocab_file=os.path.join(minilm, "vocab.txt"), do_lower_case=True)
    return [("uncased", unc, unc_slow, unc_plain, (1, -1, 1)), ("cased", cas, cas_slow, None, (0, -1, 1))]


def encode(tok, text, pair, max_len):
    kw = {"truncation": True, "max_length": max_len} if max_len > 0 else {"truncation": False}
    e = tok(text, pair, add_special_tokens=True, **kw) if pair is not None else tok(text, add_special_tokens=True, **kw)
    return e["input_ids"], e["token_type_ids"]


# ---------------------------------------------------------------- sweep

SWEEP_CONFIGS = [(1, -1, 1), (0, -1, 1), (1, 0, 1), (0, 1, 0)]   # lower, strip (-1 = follow lower), chinese


def fnv64(h, b):
    for x in b:
        h = ((h ^ x) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def sweep(cfg):
    lower, strip, chinese = cfg
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=bool(chinese),
                                      strip_accents=None if strip < 0 else bool(strip), lowercase=bool(lower))
    pre = pre_tokenizers.BertPreTokenizer()
    hashes = []
    for blk in range(0x110000 // 256):
        h = 0xCBF29CE484222325
        for c in range(blk * 256, blk * 256 + 256):
            if 0xD800 <= c <= 0xDFFF:
                continue
            words = " ".join(w for w, _ in pre.pre_tokenize_str(norm.normalize_str("A" + chr(c) + "b")))
            h = fnv64(h, (words + "\n").encode("utf-8"))
        hashes.append(h)
    return hashes


# ---------------------------------------------------------------- tables for tokenizer.c

def print_tables():
    lib = ctypes.CDLL(ctypes.util.find_library("utf8proc") or "libutf8proc.so.2")
    lib.utf8proc_category.restype = ctypes.c_int
    cats = ["Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
            "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"]
    cat = lambda c: cats[lib.utf8proc_category(c)]  # noqa: E731
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                                       lowercase=False)
    strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                                       lowercase=False)
    nfd = normalizers.NFD()
    pre = pre_tokenizers.BertPreTokenizer()
    kept, mn_extra, mn_missing, p_extra, p_missing = [], [], [], [], []
    for c in range(0x80, 0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        s = chr(c)
        k = cat(c)
        r = clean.normalize_str(s)
        if r != "" and k in ("Cf", "Co", "Cc") and c != 0xFFFD:
            kept.append(c)
        if nfd.normalize_str(s) == s:
            m = strip.normalize_str(s) == ""
            if m and k != "Mn":
                mn_extra.append(c)
            if not m and k == "Mn":
                mn_missing.append(c)
        if r not in ("", " "):
            isp = len(pre.pre_tokenize_str("a" + s + "a")) == 3
            if isp and not k.startswith("P"):
                p_extra.append(c)
            if not isp and k.startswith("P"):
                p_missing.append(c)

    def emit(name, cps):
        rs = []
        for c in cps:
            if rs and rs[-1][1] == c - 1:
                rs[-1][1] = c
            else:
                rs.append([c, c])
        print("static const tokenizer_range %s[%d] = {" % (name, len(rs)))
        line = "   "
        for a, b in rs:
            it = " {0x%X, 0x%X}," % (a, b)
            if len(line) + len(it) > 100:
                print(line)
                line = "   "
            line += it
        print(line + "\n};")
    emit("hf_kept_format", kept)
    emit("hf_mn_extra", mn_extra)
    emit("hf_mn_missing", mn_missing)
    emit("hf_punct_extra", p_extra)
    emit("hf_punct_missing", p_missing)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minilm", default="build/hf/all-MiniLM-L6-v2")
    ap.add_argument("--out", default="tests/golden")
    ap.add_argument("--tables", action="store_true")
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--retrain-vocab", action="store_true", help="train tokenizer-cased-vocab.txt again")
    a = ap.parse_args()
    if a.tables:
        print_tables()
        return 0
    import transformers
    versions = {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__}
    for k, v in PINNED.items():
        if versions[k] != v:
            print("warning: %s %s, goldens were made with %s" % (k, versions[k], v), file=sys.stderr)
    if not os.path.exists(os.path.join(a.minilm, "vocab.txt")):
        print("no %s/vocab.txt: run make build/hf/all-MiniLM-L6-v2/model.safetensors" % a.minilm, file=sys.stderr)
        return 1
    # The trainer is not deterministic (ties are broken in Rust HashMap order), so the committed
    # vocabulary is the truth and is only retrained on request.
    cased_vocab = os.path.join(a.out, "tokenizer-cased-vocab.txt")
    if a.retrain_vocab or not os.path.exists(cased_vocab):
        nv = train_cased_vocab(cased_vocab)
        print("cased vocabulary: trained, %d entries" % nv)
    toks = load_tokenizers(a.minilm, cased_vocab)
    cases = make_cases(random.Random(SEED))

    header = ("generator: tools/make_tokenizer_goldens.py\nseed: %d\ntokenizers: %s\ntransformers: %s\n"
              "python: %s\nunicodedata: %s\ntruth: BertTokenizerFast\nvocab0: uncased build/hf/all-MiniLM-L6-v2/vocab.txt "
              "(do_lower_case true)\nvocab1: cased tests/golden/tokenizer-cased-vocab.txt (do_lower_case false)\n"
              % (SEED, versions["tokenizers"], versions["transformers"], sys.version.split()[0],
                 unicodedata.unidata_version))
    out = bytearray(b"BTOK")
    out += struct.pack("<I", 1)
    hb = header.encode()
    out += struct.pack("<I", len(hb)) + hb
    out += struct.pack("<II", len(toks), len(cases))
    for name, _, _, _, (lo, st, ch) in toks:
        out += struct.pack("<I", len(name)) + name.encode() + struct.pack("<bbb", lo, st, ch)
    slow_diff = {name: [] for name, *_ in toks}
    plain_diff = 0
    for i, (text, pair, ml) in enumerate(cases):
        tb = text.encode("utf-8")
        out += struct.pack("<iBI", ml, pair is not None, len(tb)) + tb
        if pair is not None:
            pb = pair.encode("utf-8")
            out += struct.pack("<I", len(pb)) + pb
        for name, fast, slow, plain, _ in toks:
            ids, types = encode(fast, text, pair, ml)
            assert len(ids) == len(types)
            assert max(ids) < 65536
            out += struct.pack("<I", len(ids)) + struct.pack("<%dH" % len(ids), *ids) + bytes(types)
            if i % 5 == 0:
                sids, _ = encode(slow, text, pair, ml)
                if sids != ids:
                    slow_diff[name].append((text, pair, ml, fast.convert_ids_to_tokens(ids),
                                            slow.convert_ids_to_tokens(sids)))
                if plain is not None and encode(plain, text, pair, ml)[0] != ids:
                    plain_diff += 1
    with open(os.path.join(a.out, "tokenizer-corpus.btok"), "wb") as f:
        f.write(out)
    print("corpus: %d cases, %d bytes" % (len(cases), len(out)))
    print("fast from tokenizer.json vs fast from vocab.txt + settings: %d differences" % plain_diff)
    for name, diffs in slow_diff.items():
        print("%s: slow BertTokenizer differs from BertTokenizerFast on %d of %d sampled cases"
              % (name, len(diffs), (len(cases) + 4) // 5))
        for text, pair, ml, f_t, s_t in diffs[:6]:
            print("   %r %r max_len %d\n      fast %s\n      slow %s" % (text[:80], (pair or "")[:40], ml, f_t[:24], s_t[:24]))

    if not a.no_sweep:
        sw = bytearray(b"BSWP") + struct.pack("<III", 1, len(SWEEP_CONFIGS), 0x110000 // 256)
        for cfg in SWEEP_CONFIGS:
            sw += struct.pack("<bbb", *cfg)
            sw += struct.pack("<%dQ" % (0x110000 // 256), *sweep(cfg))
        with open(os.path.join(a.out, "tokenizer-sweep.bin"), "wb") as f:
            f.write(sw)
        print("sweep: %d bytes" % len(sw))
    return 0


if __name__ == "__main__":
    sys.exit(main())
