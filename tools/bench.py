#!/usr/bin/env python3
"""bench — the numbers docs/performance.md quotes, measured and modelled
without a GPU (`make bench`; a benchmark, not a test).

    python3 tools/bench.py [--build build] [--skip-compile-time]

Builds BERT-base and BERT-large checkpoints with random weights
(tools/make_bench_bert.py), compiles each twice — with the default flags
and with the baseline flags (TensorRT's structure, 7 launches per layer) —
and prints, per model and bucket (128 and 384):

  * launches per request and per encoder layer;
  * minimum HBM bytes per request against the floor (the weights a request
    streams, its inputs and outputs);
  * the performance model's microseconds on A100 and H100 for the default
    plan and the baseline plan, and their ratio;
  * every GPU of the model's table: the default plan (a step list per
    compute capability, each GPU running its own), the same flags plus
    `--tune none` (one step list, the compromise over every GPU the
    architectures serve) and the baseline;
  * the calibration table (the baseline plans against TensorRT's published
    figures, tools/fit_perf_model.py);
  * compile time of BERT-base, cold and warm, wall and CPU, with the
    default flags and cold with `--tune none` (tools/bench_compile.sh).

The baseline's compile flags are one variable: BASELINE_FLAGS in the
environment (default below).  Everything goes to stdout and to
BUILD/bench/tables.md.  Standard library only.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

# TensorRT's structure: seven launches per encoder layer, cuBLASLt GEMMs and
# separate add + LayerNorm kernels (bertc compile --fusion baseline).
BASELINE_FLAGS = os.environ.get("BASELINE_FLAGS", "--fusion baseline")
DEFAULT_FLAGS = os.environ.get("DEFAULT_FLAGS", "")
MODELS = {
    "base": ("bench-bert-base", [], 12),
    "large": ("bench-bert-large", ["--layers", "24", "--hidden", "1024", "--heads", "16", "--intermediate", "4096"], 24),
}
BUCKETS = (128, 384)
GPUS = ("a100", "h100")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def prepare(build, bertc, name, shape):
    hf = os.path.join(build, "hf", name)
    if not os.path.exists(os.path.join(hf, "model.safetensors")):
        run([sys.executable, "tools/make_bench_bert.py", hf] + shape)
    yaml = os.path.join(build, name + ".yaml")
    if not os.path.exists(yaml):
        run([bertc, "import", hf, "-o", yaml])
    return yaml


def compile_plan(bertc, yaml, out, flags, cache):
    env = dict(os.environ, BERTC_CACHE_DIR=cache)
    run([bertc, "compile", yaml, "-o", out] + shlex.split(flags), env=env)
    return out


def describe(bertc, plan):
    """Per bucket: modelled µs, launches and min HBM bytes per GPU (of the
    step list that GPU runs: a plan may carry one per compute capability),
    floor bytes."""
    insp = json.loads(run([bertc, "inspect", plan, "--json"]))
    pred = json.loads(run([bertc, "inspect", plan, "--predict", "all", "--json"]))["predictions"]
    hidden = insp["hidden"]
    lists = insp.get("variants") or [{"buckets": insp["buckets"]}]
    out = {}
    for b in insp["buckets"]:
        s = b["seq_len"]
        per_gpu = {p["gpu"]: [x for x in p["buckets"] if x["seq_len"] == s][0] for p in pred}
        runs = {p["gpu"]: [x for x in lists[p.get("variant", 0)]["buckets"] if x["seq_len"] == s][0] for p in pred}
        weights = sum(st["weight_bytes"] for st in per_gpu["a100"]["steps"])
        io = 12 * s + 2 * (s * hidden + hidden)  # ids, types, mask in; hidden states and pooled row out (fp16)
        out[s] = {"launches": {g: runs[g]["launches"] for g in runs}, "hbm": {g: runs[g]["min_hbm_bytes"] for g in runs},
                  "floor": weights + io, "us": {g: per_gpu[g]["predicted_us"] for g in per_gpu}}
    return out


def tables(results, layers):
    lines = ["## Launches, bytes and the modelled latency (default plan vs baseline)", "",
             "Launches and bytes are those of the step list each GPU runs: " + " / ".join(g.upper() for g in GPUS)
             + " default, then the baseline's (one list).", "",
             "| model | seq | launches (per layer) default / baseline | min HBM MB (x floor) default / baseline | "
             + " | ".join("%s µs default / baseline (ratio)" % g.upper() for g in GPUS) + " |",
             "|---|---|---|---|" + "---|" * len(GPUS)]
    for model in ("base", "large"):
        d, bl = results[model]["default"], results[model]["baseline"]
        L = layers[model]
        for s in BUCKETS:
            x, y = d[s], bl[s]
            yl, yh = y["launches"][GPUS[0]], y["hbm"][GPUS[0]]
            cells = ["BERT-%s" % model, str(s),
                     " / ".join("%d (%.1f)" % (x["launches"][g], (x["launches"][g] - 2) / L) for g in GPUS)
                     + " / %d (%.1f)" % (yl, (yl - 2) / L),
                     " / ".join("%.1f (%.2fx)" % (x["hbm"][g] / 1e6, x["hbm"][g] / x["floor"]) for g in GPUS)
                     + " / %.1f (%.2fx)" % (yh / 1e6, yh / y["floor"])]
            for g in GPUS:
                cells.append("%.0f / %.0f (%.2f)" % (x["us"][g], y["us"][g], x["us"][g] / y["us"][g]))
            lines.append("| " + " | ".join(cells) + " |")
    return lines


ALL_GPUS = ("t4", "a10", "l4", "l40s", "a100", "h100", "h200", "b200")


def every_gpu_table(results):
    lines = ["## Every GPU: default (a step list per compute capability) / `--tune none` (one compromise list) / "
             "baseline, modelled µs", "",
             "| model | seq | " + " | ".join(g.upper() for g in ALL_GPUS) + " |",
             "|---|---|" + "---|" * len(ALL_GPUS)]
    for model in ("base", "large"):
        for s in BUCKETS:
            cells = ["BERT-%s" % model, str(s)]
            for g in ALL_GPUS:
                t = [results[model][v][s]["us"].get(g) for v in ("default", "none", "baseline")]
                cells.append("%.0f / %.0f / %.0f" % tuple(t) if all(t) else "—")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def compile_times(build, extra=()):
    out = run(["sh", "tools/bench_compile.sh", build, "bench-bert-base"] + (["--"] + list(extra) if extra else []))
    got = {}
    for kind in ("cold", "warm"):
        m = re.search(r"^%s: wall ([\d.]+) s, cpu ([\d.]+) s" % kind, out, re.M)
        got[kind] = (float(m.group(1)), float(m.group(2))) if m else (float("nan"), float("nan"))
    load = re.search(r"load ([\d. ]+)", out)
    texts = re.search(r"\((\d+) texts\)", out)
    return got, load.group(1).strip() if load else "?", texts.group(1) if texts else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--skip-compile-time", action="store_true")
    a = ap.parse_args()
    bertc = os.path.join(a.build, "bertc")
    bench = os.path.join(a.build, "bench")
    os.makedirs(bench, exist_ok=True)
    cache = os.path.join(bench, "cache")
    results, plans, layers = {}, {}, {}
    for model, (name, shape, nlayers) in MODELS.items():
        yaml = prepare(a.build, bertc, name, shape)
        layers[model] = nlayers
        results[model] = {}
        for variant, flags in (("default", DEFAULT_FLAGS), ("none", DEFAULT_FLAGS + " --tune none"),
                               ("baseline", BASELINE_FLAGS)):
            plan = compile_plan(bertc, yaml, os.path.join(bench, "%s-%s.plan" % (name, variant)), flags, cache)
            plans[(model, variant)] = plan
            results[model][variant] = describe(bertc, plan)
    lines = ["# bertc bench (`make bench`)", "",
             "Default flags: `%s`; baseline flags: `%s`." % (DEFAULT_FLAGS or "(none)", BASELINE_FLAGS or "(none)"),
             ""] + tables(results, layers) + [""] + every_gpu_table(results)
    cal = run([sys.executable, "tools/fit_perf_model.py", "--bertc", bertc, "--markdown",
               "--base", plans[("base", "baseline")], "--large", plans[("large", "baseline")]])
    lines += ["", "## Calibration: the baseline plans against TensorRT's published figures", ""] + cal.strip().split("\n")
    if not a.skip_compile_time:
        t, load, texts = compile_times(a.build, shlex.split(DEFAULT_FLAGS))
        n, _, ntexts = compile_times(a.build, shlex.split(DEFAULT_FLAGS) + ["--tune", "none"])
        lines += ["", "## Compile time, BERT-base, default archs and buckets (%d cores, load %s)" % (os.cpu_count(), load),
                  "", "| | kernel texts | wall s | CPU s |", "|---|---|---|---|",
                  "| cold (empty cache) | %s | %.2f | %.2f |" % ((texts,) + t["cold"]),
                  "| warm (unchanged recompile) | %s | %.2f | %.2f |" % ((texts,) + t["warm"]),
                  "| cold, `--tune none` | %s | %.2f | %.2f |" % ((ntexts,) + n["cold"])]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(bench, "tables.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
