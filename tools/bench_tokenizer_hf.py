#!/usr/bin/env python3
"""bench_tokenizer_hf.py — Hugging Face's fast tokenizers on the texts
tools/bench_tokenizer.c runs, in the same line format (docs/performance.md).

    python bench_tokenizer_hf.py HF_DIR TEXTS

Measures AutoTokenizer called per text (what an application calling
transformers pays), the Rust backend's encode per text (no transformers
layer), and its encode_batch (Rust threads: RAYON_NUM_THREADS, all CPUs by
default), each with the model's special tokens and no truncation, over as
many rounds as fit in about a second after a warm-up round.
"""
import os
import sys
import time

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def timed(fn, n_texts, nbytes, label, threads):
    fn()
    rounds, t0 = 0, time.perf_counter()
    while True:
        tokens = fn()
        rounds += 1
        t1 = time.perf_counter()
        if rounds >= 1 and t1 - t0 >= 1.0:
            break
    s = (t1 - t0) / rounds
    print("hf %s threads=%d texts=%d tokens=%d texts_per_s=%.0f tokens_per_s=%.0f mb_per_s=%.2f" %
          (label, threads, n_texts, tokens, n_texts / s, tokens / s, nbytes / s / 1e6))


def main():
    from transformers import AutoTokenizer
    d, path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        raw = f.read()
    texts = raw.decode("utf-8").split("\n")
    if texts and texts[-1] == "":
        texts.pop()
    tok = AutoTokenizer.from_pretrained(d)
    backend = tok.backend_tokenizer
    backend.no_truncation()
    n, nb = len(texts), len(raw)
    timed(lambda: sum(len(tok(t)["input_ids"]) for t in texts), n, nb, "transformers-single", 1)
    timed(lambda: sum(len(backend.encode(t).ids) for t in texts), n, nb, "tokenizers-single", 1)
    threads = int(os.environ.get("RAYON_NUM_THREADS", os.cpu_count() or 1))
    timed(lambda: sum(len(e.ids) for e in backend.encode_batch(texts)), n, nb, "tokenizers-batch", threads)


if __name__ == "__main__":
    main()
