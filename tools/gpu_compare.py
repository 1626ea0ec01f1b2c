#!/usr/bin/env python3
"""bertc on the GPU against transformers on the GPU (tools/gpu_validate.sh).

usage: gpu_compare.py PLAN HF_DIR fp32|fp16

Runs a few sentences and a random 512-token request through
`bertc run PLAN --device cuda` and through transformers' BertModel in the
plan's precision on CUDA, and checks the tolerances of docs/numerics.md:
relative error (max |diff| / max |want|) <= 1e-4 for fp32 and 2e-2 for fp16,
row cosine >= 0.999.  Exits non-zero on a miss.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import BertModel, BertTokenizer

plan, hf_dir, prec = sys.argv[1], sys.argv[2], sys.argv[3]
dtype = torch.float16 if prec == "fp16" else torch.float32
rtol = 2e-2 if prec == "fp16" else 1e-4
model = BertModel.from_pretrained(hf_dir, torch_dtype=dtype).cuda().eval()
tok = BertTokenizer.from_pretrained(hf_dir)
rng = np.random.default_rng(0)
requests = [tok(s)["input_ids"] for s in ("Hello world.", "The quick brown fox jumps over the lazy dog.",
                                           "Café au lait, s'il vous plaît. 東京は晴れです。")]
requests.append([101] + list(rng.integers(1000, tok.vocab_size, 510)) + [102])
bad = 0
with tempfile.TemporaryDirectory() as tmp:
    for ids in requests:
        out = os.path.join(tmp, "lhs.npy")
        subprocess.run(["build/bertc", "run", plan, "--device", "cuda", "--ids", " ".join(map(str, ids)),
                        "--output", out], check=True)
        got = np.load(out).astype(np.float64)
        with torch.no_grad():
            want = model(torch.tensor([ids]).cuda()).last_hidden_state[0].float().cpu().numpy().astype(np.float64)
        rel = np.abs(got - want).max() / np.abs(want).max()
        cos = ((got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)).min()
        ok = rel <= rtol and cos >= 0.999
        bad += not ok
        print("%s len %4d: relative error %.3g, min row cosine %.6f %s" % (prec, len(ids), rel, cos, "ok" if ok else "FAIL"))
sys.exit(1 if bad else 0)
