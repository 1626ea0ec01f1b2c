#!/usr/bin/env python3
"""bertc against transformers on the same device (tools/gpu_validate.sh).

usage: gpu_compare.py PLAN HF_DIR fp32|fp16 [--device cuda|emu]
                      [--lens 7,128,384] [--bertc build/bertc]

Runs requests through `bertc run PLAN --device D` and through transformers'
BertModel in the plan's precision (on the GPU for cuda; on the CPU, float32
only, for the emulated device), and checks the tolerances of
docs/numerics.md: relative error (max |diff| / max |want|) <= 1e-4 for fp32
and 2e-2 for fp16, row cosine >= 0.999.  The requests: a few sentences when
HF_DIR has a vocabulary (a real checkpoint), and one request of random ids
per length of --lens (the checkpoints of tools/make_bench_bert.py have no
vocabulary: their ids are drawn, [CLS] first and [SEP] last).  Exits 1 on a
miss, 2 on bad arguments.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers


def requests_for(hf_dir, vocab_size, lens, rng):
    reqs = []
    if os.path.exists(os.path.join(hf_dir, "vocab.txt")):
        tok = transformers.BertTokenizer.from_pretrained(hf_dir)
        for s in ("Hello world.", "The quick brown fox jumps over the lazy dog.",
                  "Café au lait, s'il vous plaît. 東京は晴れです。"):
            reqs.append(tok(s)["input_ids"])
    for n in lens:
        mid = [int(x) for x in rng.integers(min(1000, vocab_size - 1), vocab_size, max(n - 2, 0))]
        reqs.append(([101] + mid + [102])[:n] if vocab_size > 102 else mid[:n])
    return reqs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("hf_dir")
    ap.add_argument("precision", choices=("fp32", "fp16"))
    ap.add_argument("--device", choices=("cuda", "emu"), default="cuda")
    ap.add_argument("--lens", default="510")
    ap.add_argument("--bertc", default="build/bertc")
    a = ap.parse_args()
    if a.device == "emu" and a.precision == "fp16":
        ap.error("fp16 is compared on a GPU only (PyTorch has no float16 matrix products on the CPU)")
    dtype = torch.float16 if a.precision == "fp16" else torch.float32
    rtol = 2e-2 if a.precision == "fp16" else 1e-4
    dev = "cuda" if a.device == "cuda" else "cpu"
    # Cast after loading: transformers renamed from_pretrained's torch_dtype to dtype (4.56).
    model = transformers.BertModel.from_pretrained(a.hf_dir).to(dtype).to(dev).eval()
    lens = [int(x) for x in a.lens.split(",")]
    reqs = requests_for(a.hf_dir, model.config.vocab_size, lens, np.random.default_rng(0))
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ids in reqs:
            out = os.path.join(tmp, "lhs.npy")
            subprocess.run([a.bertc, "run", a.plan, "--device", a.device, "--ids", " ".join(map(str, ids)),
                            "--output", out], check=True)
            got = np.load(out).astype(np.float64)
            with torch.no_grad():
                want = model(torch.tensor([ids]).to(dev)).last_hidden_state[0].float().cpu().numpy()
            want = want.astype(np.float64)
            rel = np.abs(got - want).max() / np.abs(want).max()
            cos = ((got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)).min()
            ok = rel <= rtol and cos >= 0.999
            bad += not ok
            print("%s len %4d: relative error %.3g, min row cosine %.6f %s"
                  % (a.precision, len(ids), rel, cos, "ok" if ok else "MISS"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
