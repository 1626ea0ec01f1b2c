#!/usr/bin/env python3
"""make_bench_bert — a BERT-base-sized checkpoint with random weights, for
benchmarks (compile time, plan size, launches, bytes), not for numerics.

Usage:  python3 tools/make_bench_bert.py OUT_DIR [--layers 12] [--hidden 768]
            [--heads 12] [--intermediate 3072] [--vocab 30522] [--max-pos 512]
            [--dtype F16|F32]

Writing 110 M values one by one in pure Python takes minutes, and a
benchmark does not care which random values it gets, so this script draws one
1 MiB pool of float16 values (std ~0.05, deterministic splitmix64 integers)
and fills each tensor from the pool at a per-tensor offset.  Weights are F16
by default (as a served BERT-base checkpoint usually is); --dtype F32 writes
them as Hugging Face's own bert-base-uncased checkpoint is stored, which
makes the compile convert every weight (the benchmark of that path).  The
importer widens or keeps them per plan precision.  Standard library only.
"""
import argparse
import json
import os
import struct


def splitmix(seed):
    x = seed & ((1 << 64) - 1)
    while True:
        x = (x + 0x9E3779B97F4A7C15) & ((1 << 64) - 1)
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
        yield z ^ (z >> 31)


def make_pool(nbytes):
    rng = splitmix(12345)
    vals = []
    for _ in range(nbytes // 2):
        r = next(rng)
        # Irwin-Hall of four 16-bit uniforms: mean 0, std ~0.05 after scaling.
        s = sum((r >> (16 * k)) & 0xFFFF for k in range(4)) / 65535.0 - 2.0
        vals.append(s * 0.087)
    return struct.pack("<%de" % len(vals), *vals)


def tensors(a):
    h, i = a.hidden, a.intermediate
    out = [("embeddings.word_embeddings.weight", [a.vocab, h]),
           ("embeddings.position_embeddings.weight", [a.max_pos, h]),
           ("embeddings.token_type_embeddings.weight", [2, h]),
           ("embeddings.LayerNorm.weight", [h]), ("embeddings.LayerNorm.bias", [h])]
    for l in range(a.layers):
        p = "encoder.layer.%d." % l
        for name in ("query", "key", "value"):
            out += [(p + "attention.self.%s.weight" % name, [h, h]), (p + "attention.self.%s.bias" % name, [h])]
        out += [(p + "attention.output.dense.weight", [h, h]), (p + "attention.output.dense.bias", [h]),
                (p + "attention.output.LayerNorm.weight", [h]), (p + "attention.output.LayerNorm.bias", [h]),
                (p + "intermediate.dense.weight", [i, h]), (p + "intermediate.dense.bias", [i]),
                (p + "output.dense.weight", [h, i]), (p + "output.dense.bias", [h]),
                (p + "output.LayerNorm.weight", [h]), (p + "output.LayerNorm.bias", [h])]
    out += [("pooler.dense.weight", [h, h]), ("pooler.dense.bias", [h])]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--intermediate", type=int, default=3072)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--max-pos", type=int, default=512)
    ap.add_argument("--dtype", choices=("F16", "F32"), default="F16")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    pool = make_pool(1 << 20)
    es = 2 if a.dtype == "F16" else 4
    if es == 4:  # the same values, widened exactly
        vals = struct.unpack("<%de" % (len(pool) // 2), pool)
        pool = struct.pack("<%df" % len(vals), *vals)
    header, offset, items = {}, 0, []
    for idx, (name, shape) in enumerate(sorted(tensors(a))):
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": a.dtype, "shape": shape, "data_offsets": [offset, offset + es * n]}
        items.append((idx, es * n))
        offset += es * n
    hjson = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    tmp = os.path.join(a.out, ".model.safetensors.tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for idx, nbytes in items:
            start = (idx * 7919 * es) % len(pool)
            while nbytes > 0:
                chunk = pool[start:start + nbytes]
                f.write(chunk)
                nbytes -= len(chunk)
                start = 0
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": a.hidden,
              "num_attention_heads": a.heads, "num_hidden_layers": a.layers,
              "intermediate_size": a.intermediate, "vocab_size": a.vocab,
              "max_position_embeddings": a.max_pos, "type_vocab_size": 2, "hidden_act": "gelu",
              "layer_norm_eps": 1e-12}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    os.replace(tmp, os.path.join(a.out, "model.safetensors"))


if __name__ == "__main__":
    main()
