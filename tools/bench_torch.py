#!/usr/bin/env python3
"""PyTorch eager fp16 latency of a BERT checkpoint, batch 1, per bertc bucket
length, timed like `bertc bench` (CUDA events around each request after a
warm-up; p50/p90/p99 in microseconds).  tools/gpu_validate.sh runs it.

usage: bench_torch.py HF_DIR [--iters N] [--lens 32,64,128,256,384,512]
"""
import argparse

import numpy as np
import torch
from transformers import BertModel

ap = argparse.ArgumentParser()
ap.add_argument("hf_dir")
ap.add_argument("--iters", type=int, default=200)
ap.add_argument("--lens", default="32,64,128,256,384,512")
a = ap.parse_args()
# Cast after loading: transformers renamed from_pretrained's torch_dtype to dtype (4.56).
model = BertModel.from_pretrained(a.hf_dir).half().cuda().eval()
print("%8s %10s %10s %10s %10s" % ("len", "p50", "p90", "p99", "jitter"))
for n in map(int, a.lens.split(",")):
    ids = torch.randint(1000, model.config.vocab_size, (1, n)).cuda()
    times = []
    with torch.no_grad():
        for i in range(20 + a.iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            model(ids)
            e.record()
            torch.cuda.synchronize()
            if i >= 20:
                times.append(1e3 * s.elapsed_time(e))
    p = np.percentile(times, [50, 90, 99])
    print("%8d %10.1f %10.1f %10.1f %10.1f" % (n, p[0], p[1], p[2], p[2] - p[0]))
