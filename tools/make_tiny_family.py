#!/usr/bin/env python3
"""make_tiny_family — small random checkpoints of the other encoder families.

Usage:  python3 tools/make_tiny_family.py --variant NAME OUT_DIR
        python3 tools/make_tiny_family.py --list

Design.  tools/make_tiny_bert.py writes BERT checkpoints; this script writes
the same kind of fixture for RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA and
MPNet, with and without task heads (sequence and token classification) and,
for one MPNet, a sentence-transformers directory with a Dense module.  It
reuses that script's machinery unchanged: every value comes from the
splitmix64 stream seeded by "variant/tensor name", is rounded to the storage
dtype in pure Python, and the files are written byte-identically on every
run and every Python 3 (no `random`, no libm).  The checkpoints are not
committed: the goldens made from them (tools/make_family_goldens.py, with
transformers' own *Model / *For...Classification classes, which must load
every tensor and report no missing or unexpected key) record the sha256 of
model.safetensors, and tests/cli/fixtures.sh regenerates and compares.

Sizes are awkward on purpose: head sizes that are not powers of two
(12, 20), intermediate sizes that are not multiples of 64, an ELECTRA whose
embedding size differs from its hidden size (the embeddings projection), a
DistilBERT with sinusoidal position embeddings whose table is *absent* from
the checkpoint (bertc computes it at import; the golden script installs
transformers' own sinusoid), MPNet's relative-position table, and
RoBERTa-style position ids (padding_idx 1, so max_position - 2 usable rows).

Tokenizers: the BERT-family fixtures get a vocab.txt written here; the
RoBERTa one takes the byte-level BPE of tests/golden/tok-roberta-files
(vocab.json + merges.txt, 3,000 entries) and the XLM-R one the
SentencePiece Unigram of tests/golden/tok-xlmr (tokenizer.json, 2,502
entries) — the committed tokenizers tools/make_tokenizer_families.py
trained — with model_max_length cut to the fixture's positions, so their
vocabulary sizes are those tokenizers'.

Standard library only: CI runs this with a plain python3.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tiny_bert as mtb  # noqa: E402  (same directory; standard library only)

# family: roberta | xlm-roberta | distilbert | electra | mpnet
# head: None (bare encoder, with pooler if `pooler`), "seq" (sequence
# classification with num_labels), "tok" (token classification)
VARIANTS = {
    "tiny-roberta": dict(
        family="roberta", hidden=72, heads=6, layers=2, intermediate=100,
        vocab=3000, max_pos=42, type_vocab=1, act="gelu", eps=1e-5,
        dtype="F32", head="seq", num_labels=3, tokenizer="tok-roberta-files",
        id2label={"0": "negative", "1": "neutral", "2": "positive"},
        architectures=["RobertaForSequenceClassification"]),
    "tiny-xlmr-tokcls": dict(
        family="xlm-roberta", hidden=48, heads=4, layers=2, intermediate=70,
        vocab=2502, max_pos=34, type_vocab=1, act="gelu", eps=1e-5,
        dtype="F16", head="tok", num_labels=5, tokenizer="tok-xlmr",
        id2label={"0": "O", "1": "B-PER", "2": "I-PER", "3": "B-LOC", "4": "I-LOC"},
        architectures=["XLMRobertaForTokenClassification"]),
    "tiny-distilbert": dict(
        family="distilbert", hidden=80, heads=4, layers=2, intermediate=150,
        vocab=400, max_pos=48, act="gelu", sinusoidal=True,
        dtype="BF16", head="seq", num_labels=2, id2label=None, vocab_txt=True,
        architectures=["DistilBertForSequenceClassification"]),
    "tiny-electra": dict(
        family="electra", hidden=48, embedding=32, heads=4, layers=2, intermediate=90,
        vocab=350, max_pos=40, type_vocab=2, act="gelu", eps=1e-12,
        dtype="F32", head="seq", num_labels=1, id2label={"0": "score"},
        architectures=["ElectraForSequenceClassification"]),
    "tiny-mpnet": dict(
        family="mpnet", hidden=60, heads=5, layers=2, intermediate=110,
        vocab=320, max_pos=66, act="gelu", eps=1e-5, buckets=32,
        dtype="F32", head=None, pooler=True, vocab_txt=True,
        sentence_transformers=dict(pooling="mean", dense=24, dense_act="tanh", normalize=True),
        architectures=["MPNetModel"]),
    "tiny-mpnet-seqcls": dict(
        family="mpnet", hidden=40, heads=2, layers=1, intermediate=70,
        vocab=200, max_pos=34, act="gelu", eps=1e-5, buckets=32,
        dtype="F16", head="seq", num_labels=2, id2label=None,
        architectures=["MPNetForSequenceClassification"]),
    "tiny-cross-encoder": dict(
        family="bert", hidden=64, heads=4, layers=2, intermediate=100,
        vocab=500, max_pos=40, type_vocab=2, act="gelu", eps=1e-12,
        dtype="F32", head="seq", num_labels=1, id2label=None, vocab_txt=True,
        cross_encoder=True,
        architectures=["BertForSequenceClassification"]),
}

# ---------------------------------------------------------------- tensors


def _ln(out, base, n, legacy=False):
    g, b = ("gamma", "beta") if legacy else ("weight", "bias")
    out.append((base + "." + g, [n], "ln_gamma"))
    out.append((base + "." + b, [n], "ln_beta"))


def _dense(out, base, n_out, n_in, kind):
    out.append((base + ".weight", [n_out, n_in], kind))
    out.append((base + ".bias", [n_out], "bias"))


def _bert_like(cfg, pre):
    """bert/roberta/xlm-roberta/electra encoders (same layer names)."""
    H, P, V = cfg["hidden"], cfg["max_pos"], cfg["vocab"]
    E = cfg.get("embedding", H)
    out = []
    e = pre + "embeddings"
    out.append((e + ".word_embeddings.weight", [V, E], "embedding"))
    out.append((e + ".position_embeddings.weight", [P, E], "embedding"))
    out.append((e + ".token_type_embeddings.weight", [cfg["type_vocab"], E], "embedding"))
    _ln(out, e + ".LayerNorm", E)
    if E != H:
        _dense(out, pre + "embeddings_project", H, E, "proj")
    _layers(out, cfg, pre + "encoder.layer",
            ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
             "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"))
    return out


def _layers(out, cfg, base, names):
    """Every layer's tensors: names = (q, k, v, o, attn LayerNorm, FFN in, FFN out, out LayerNorm)."""
    H, I = cfg["hidden"], cfg["intermediate"]
    q, k, v, o, ln1, fin, fout, ln2 = names
    for i in range(cfg["layers"]):
        L = "%s.%d." % (base, i)
        _dense(out, L + q, H, H, "qk")
        _dense(out, L + k, H, H, "qk")
        _dense(out, L + v, H, H, "v")
        _dense(out, L + o, H, H, "proj")
        _ln(out, L + ln1, H)
        _dense(out, L + fin, I, H, "proj")
        _dense(out, L + fout, H, I, "proj_down")
        _ln(out, L + ln2, H)


def _distilbert(cfg):
    H, P, V = cfg["hidden"], cfg["max_pos"], cfg["vocab"]
    out = []
    e = "distilbert.embeddings"
    out.append((e + ".word_embeddings.weight", [V, H], "embedding"))
    if not cfg["sinusoidal"]:
        out.append((e + ".position_embeddings.weight", [P, H], "embedding"))
    _ln(out, e + ".LayerNorm", H)
    _layers(out, cfg, "distilbert.transformer.layer",
            ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm",
             "ffn.lin1", "ffn.lin2", "output_layer_norm"))
    return out


def _mpnet(cfg):
    H, P, V = cfg["hidden"], cfg["max_pos"], cfg["vocab"]
    out = []
    e = "mpnet.embeddings"
    out.append((e + ".word_embeddings.weight", [V, H], "embedding"))
    out.append((e + ".position_embeddings.weight", [P, H], "embedding"))
    _ln(out, e + ".LayerNorm", H)
    _layers(out, cfg, "mpnet.encoder.layer",
            ("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o", "attention.LayerNorm",
             "intermediate.dense", "output.dense", "output.LayerNorm"))
    # one relative-position table shared by every layer: [buckets, heads];
    # large values so the bias visibly moves the softmax
    out.append(("mpnet.encoder.relative_attention_bias.weight", [cfg["buckets"], cfg["heads"]], "embedding"))
    return out


PREFIX = {"bert": "bert.", "roberta": "roberta.", "xlm-roberta": "roberta.", "electra": "electra."}


def tensor_list(cfg):
    fam, H = cfg["family"], cfg["hidden"]
    if fam == "distilbert":
        out = _distilbert(cfg)
    elif fam == "mpnet":
        out = _mpnet(cfg)
    else:
        out = _bert_like(cfg, PREFIX[fam])
    NL = cfg.get("num_labels", 0)
    pre = "mpnet." if fam == "mpnet" else PREFIX.get(fam, "")
    if cfg["head"] is None and cfg.get("pooler"):
        _dense(out, pre + "pooler.dense", H, H, "proj")
    if cfg["head"] == "tok":
        _dense(out, "classifier", NL, H, "proj")
    elif cfg["head"] == "seq":
        if fam == "bert":
            _dense(out, "bert.pooler.dense", H, H, "proj")
            _dense(out, "classifier", NL, H, "proj")
        elif fam == "distilbert":
            _dense(out, "pre_classifier", H, H, "proj")
            _dense(out, "classifier", NL, H, "proj")
        else:  # roberta, xlm-roberta, electra, mpnet: dense -> act -> out_proj
            _dense(out, "classifier.dense", H, H, "proj")
            _dense(out, "classifier.out_proj", NL, H, "proj")
    return out


def st_dense_tensors(cfg):
    st = cfg["sentence_transformers"]
    out = []
    _dense(out, "linear", st["dense"], cfg["hidden"], "proj")
    return out


def safetensors_for(variant, tensors, dtype):
    """model.safetensors bytes for `tensors` (make_tiny_bert's layout)."""
    return mtb.safetensors_bytes(variant, {"dtype": dtype}, tensors)

# ---------------------------------------------------------------- text files


def config_json(cfg):
    fam = cfg["family"]
    conf = {"architectures": cfg["architectures"], "initializer_range": 0.02,
            "vocab_size": cfg["vocab"], "max_position_embeddings": cfg["max_pos"]}
    if fam == "distilbert":
        conf.update({"model_type": "distilbert", "dim": cfg["hidden"], "n_heads": cfg["heads"],
                     "n_layers": cfg["layers"], "hidden_dim": cfg["intermediate"],
                     "activation": cfg["act"], "sinusoidal_pos_embds": cfg["sinusoidal"],
                     "dropout": 0.1, "attention_dropout": 0.1, "qa_dropout": 0.1,
                     "seq_classif_dropout": 0.2, "pad_token_id": 0, "tie_weights_": True})
    else:
        conf.update({"model_type": fam, "hidden_size": cfg["hidden"],
                     "num_attention_heads": cfg["heads"], "num_hidden_layers": cfg["layers"],
                     "intermediate_size": cfg["intermediate"], "hidden_act": cfg["act"],
                     "layer_norm_eps": cfg["eps"], "hidden_dropout_prob": 0.1,
                     "attention_probs_dropout_prob": 0.1})
        if fam != "mpnet":
            conf["type_vocab_size"] = cfg["type_vocab"]
            conf["position_embedding_type"] = "absolute"
        if fam in ("roberta", "xlm-roberta", "mpnet"):
            conf.update({"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2})
        else:
            conf["pad_token_id"] = 0
        if fam == "electra":
            conf["embedding_size"] = cfg["embedding"]
        if fam == "mpnet":
            conf["relative_attention_num_buckets"] = cfg["buckets"]
    if cfg["head"] is not None:
        n = cfg["num_labels"]
        names = cfg.get("id2label") or {str(i): "LABEL_%d" % i for i in range(n)}
        conf["id2label"] = names
        conf["label2id"] = {v: int(k) for k, v in names.items()}
        if n == 1:
            conf["problem_type"] = "regression"
    if cfg.get("cross_encoder"):
        conf["sbert_ce_default_activation_function"] = "torch.nn.modules.activation.Sigmoid"
    return json.dumps(conf, indent=2, sort_keys=True) + "\n"


def mpnet_vocab_lines(size):
    """MPNet's vocab.txt: <s> <pad> </s> <unk> first, [UNK] and <mask> kept."""
    toks = ["<s>", "<pad>", "</s>", "<unk>"]
    base = mtb.vocab_lines(size).split("\n")[:-1]
    toks += [t for t in base if t not in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")]
    toks = toks[:size - 1] + ["<mask>"]
    assert "[UNK]" in toks and len(set(toks)) == len(toks) == size
    return "".join(t + "\n" for t in toks)


def tokenizer_config_json(cfg):
    if cfg["family"] == "mpnet":
        conf = {"bos_token": "<s>", "cls_token": "<s>", "do_lower_case": True, "eos_token": "</s>",
                "mask_token": "<mask>", "model_max_length": cfg["max_pos"] - 2, "pad_token": "<pad>",
                "sep_token": "</s>", "strip_accents": None, "tokenize_chinese_chars": True,
                "tokenizer_class": "MPNetTokenizer", "unk_token": "[UNK]"}
    else:
        cls = "DistilBertTokenizer" if cfg["family"] == "distilbert" else "BertTokenizer"
        conf = {"cls_token": "[CLS]", "do_lower_case": True, "mask_token": "[MASK]",
                "model_max_length": cfg["max_pos"], "pad_token": "[PAD]", "sep_token": "[SEP]",
                "strip_accents": None, "tokenize_chinese_chars": True, "tokenizer_class": cls,
                "unk_token": "[UNK]"}
    return json.dumps(conf, indent=2, sort_keys=True) + "\n"


GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "golden")


def tokenizer_files(cfg):
    """A committed tokenizer (tests/golden/NAME) with model_max_length cut to the positions."""
    d = os.path.join(GOLDEN, cfg["tokenizer"])
    files = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            files[name] = f.read()
    conf = json.loads(files["tokenizer_config.json"].decode("utf-8"))
    conf["model_max_length"] = cfg["max_pos"] - 2
    files["tokenizer_config.json"] = (json.dumps(conf, indent=2, sort_keys=True) + "\n").encode("utf-8")
    return files


def sentence_files(cfg):
    st = cfg["sentence_transformers"]
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
    ]
    if st["normalize"]:
        modules.append({"idx": 3, "name": "3", "path": "3_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    pooling = {"word_embedding_dimension": cfg["hidden"], "pooling_mode_cls_token": st["pooling"] == "cls",
               "pooling_mode_mean_tokens": st["pooling"] == "mean", "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False}
    acts = {"tanh": "torch.nn.modules.activation.Tanh", "identity": "torch.nn.modules.linear.Identity"}
    dense = {"in_features": cfg["hidden"], "out_features": st["dense"], "bias": True,
             "activation_function": acts[st["dense_act"]]}
    dump = lambda o: (json.dumps(o, indent=2, sort_keys=True) + "\n").encode("utf-8")  # noqa: E731
    return {
        "modules.json": dump(modules),
        "sentence_bert_config.json": dump({"do_lower_case": False, "max_seq_length": cfg["max_pos"] - 2}),
        "1_Pooling/config.json": dump(pooling),
        "2_Dense/config.json": dump(dense),
    }

# ---------------------------------------------------------------- output


def build(variant, out_dir):
    cfg = VARIANTS[variant]
    files = {"config.json": config_json(cfg).encode("utf-8")}
    if cfg.get("vocab_txt"):
        lines = mpnet_vocab_lines(cfg["vocab"]) if cfg["family"] == "mpnet" else mtb.vocab_lines(cfg["vocab"])
        files["vocab.txt"] = lines.encode("utf-8")
        files["tokenizer_config.json"] = tokenizer_config_json(cfg).encode("utf-8")
    if cfg.get("tokenizer"):
        files.update(tokenizer_files(cfg))
    if cfg.get("sentence_transformers"):
        files.update(sentence_files(cfg))
        files["2_Dense/model.safetensors"] = safetensors_for(variant + "/dense", st_dense_tensors(cfg), "F32")
    model = safetensors_for(variant, tensor_list(cfg), cfg["dtype"])
    for name in sorted(files):
        path = os.path.join(out_dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mtb.write_atomic(path, files[name])
    mtb.write_atomic(os.path.join(out_dir, "model.safetensors"), model)


def main(argv):
    if argv == ["--list"]:
        print("\n".join(sorted(VARIANTS)))
        return 0
    if len(argv) != 3 or argv[0] != "--variant" or argv[1] not in VARIANTS:
        print("usage: make_tiny_family.py --variant NAME OUT_DIR | --list\nvariants: " +
              ", ".join(sorted(VARIANTS)), file=sys.stderr)
        return 2
    os.makedirs(argv[2], exist_ok=True)
    build(argv[1], argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
