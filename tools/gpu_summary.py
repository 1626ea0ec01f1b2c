#!/usr/bin/env python3
"""gpu_summary — the tables of a tools/gpu_validate.sh run, in Markdown.

usage: gpu_summary.py WORK_DIR    (prints the summary on stdout)

Reads what gpu_validate.sh left in WORK_DIR, each file one command's output:
env.out (the GPU), bench-MODEL-PLAN.out and bench-MODEL-default-nopdl.out
(`bertc bench` text), steps-MODEL-PLAN.json.out (`bertc bench --per-step
--json --predict GPU`), torch-MODEL.out (tools/bench_torch.py),
compile-MODEL-*.err (`bertc compile`'s own account of its time),
check-*.out, compare-*.out, batch-*.out, failed.txt.  PLAN is default,
baseline (--fusion baseline) or none (--tune none).  The tables are the
ones docs/performance.md needs once a GPU has run the script: measured
latency of the default plan against its baseline (the ratio every modelled
claim is stated as), the performance model's prediction against the
measurement per plan and per kernel family (what would recalibrate it),
the compile times, and the checks.  A file that is missing leaves its
cells "-"; a file that is there but cannot be read is an error naming it
(exit 1).  Standard library only.
"""
import json
import os
import re
import sys

PLANS = ("default", "baseline", "none")
# The commands gpu_validate.sh saw fail (failed.txt): their outputs are read as missing.
FAILED = set()


class SummaryError(Exception):
    pass


def read_raw(work, name):
    with open(os.path.join(work, name), encoding="utf-8", errors="replace") as f:
        return f.read()


def read(work, name):
    path = os.path.join(work, name)
    if not os.path.exists(path) or os.path.splitext(name)[0] in FAILED:
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def latency_rows(work, name, ncols, cols, header):
    """{len: the columns cols} of a latency table of ncols numbers per row, or None."""
    text = read(work, name)
    if text is None:
        return None
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == ncols and f[0].isdigit():
            try:
                rows[int(f[0])] = tuple(float(f[c]) for c in cols)
            except ValueError:
                raise SummaryError("%s: a row that is not numbers: %r" % (os.path.join(work, name), line))
    if not rows:
        raise SummaryError("%s: no latency rows (%s)" % (os.path.join(work, name), header))
    return rows


def bench_rows(work, name):
    """{len: (dev p50, host p50)} from `bertc bench` text, or None."""
    return latency_rows(work, name, 8, (1, 5), "len, dev p50, ..., host p99")


def torch_rows(work, name):
    """{len: (p50,)} from tools/bench_torch.py, or None."""
    return latency_rows(work, name, 5, (1,), "len, p50, p90, p99, jitter")


def steps_json(work, name):
    text = read(work, name)
    if text is None:
        return None
    path = os.path.join(work, name)
    try:
        d = json.loads(text)
        lengths = {L["len"]: L for L in d["lengths"]}
        # the fields the tables read, checked here so that a bad file fails with its name
        if any("measured_us" not in s or "what" not in s for L in lengths.values() for s in L["steps"]):
            raise KeyError("a step without measured_us or what")
    except (ValueError, KeyError, TypeError) as e:
        raise SummaryError("%s: not the JSON of bertc bench --per-step --json (%s)" % (path, e))
    return d, lengths


def family(step):
    """A step's kernel family: bertc_gemm_ln_f16_... -> gemm_ln; cuBLASLt steps -> cublasLt."""
    what = step["what"]
    if what.startswith("bertc_"):
        m = re.match(r"bertc_(.+?)_(f16|bf16|f32)_", what)
        return m.group(1) if m else what
    if what.lower().startswith("cublaslt"):
        return "cublasLt"
    return step["kind"]


def predicted(steps):
    p = [s.get("predicted_us") for s in steps]
    return None if any(x is None for x in p) else sum(p)


def fmt(x, digits=1):
    return "-" if x is None else "%.*f" % (digits, x)


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else "%.2f" % (a / b)


def models_of(work):
    names = sorted(os.listdir(work))
    found = []
    for n in names:
        m = re.match(r"bench-(.+)-default\.out$", n)
        if m:
            found.append(m.group(1))
    return found


def latency_table(work, models):
    out = ["## Latency per request, batch 1 (p50 µs: CUDA events around the graph launch)", "",
           "| model | seq | default | baseline | default ÷ baseline | --tune none | default, no PDL "
           "| host p50, default | PyTorch eager fp16 | default ÷ PyTorch |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        b = {p: bench_rows(work, "bench-%s-%s.out" % (m, p)) for p in PLANS}
        nopdl = bench_rows(work, "bench-%s-default-nopdl.out" % m)
        tr = torch_rows(work, "torch-%s.out" % m)
        if b["default"] is None:
            out.append("| %s | - | (bench failed) | | | | | | | |" % m)
            continue
        for n in sorted(b["default"]):
            def dev(rows):
                return rows[n][0] if rows and n in rows else None
            t = tr[n][0] if tr and n in tr else None
            out.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                m, n, fmt(dev(b["default"])), fmt(dev(b["baseline"])), ratio(dev(b["default"]), dev(b["baseline"])),
                fmt(dev(b["none"])), fmt(dev(nopdl)), fmt(b["default"][n][1]), fmt(t), ratio(dev(b["default"]), t)))
    return out


def model_tables(work, models):
    head = ["## The performance model against the measurement (bench --per-step)", ""]
    whole = ["| model | seq | plan | steps | graph µs | sum of steps µs | predicted µs | predicted ÷ graph |",
             "|---|---|---|---|---|---|---|---|"]
    fam = ["", "Per kernel family (the default plan and its baseline): each step alone between CUDA events.", "",
           "| model | seq | plan | family | steps | measured µs | predicted µs | predicted ÷ measured |",
           "|---|---|---|---|---|---|---|---|"]
    gpu = None
    for m in models:
        for p in PLANS:
            r = steps_json(work, "steps-%s-%s.json.out" % (m, p))
            if r is None:
                continue
            d, lengths = r
            gpu = d.get("predicted_for") or gpu
            for n in sorted(lengths):
                L = lengths[n]
                pred = predicted(L["steps"])
                whole.append("| %s | %d | %s | %d | %s | %s | %s | %s |" % (
                    m, n, p, len(L["steps"]), fmt(L.get("graph_us")), fmt(L.get("sum_us")), fmt(pred),
                    ratio(pred, L.get("graph_us"))))
                if p == "none":
                    continue
                groups = {}
                for s in L["steps"]:
                    groups.setdefault(family(s), []).append(s)
                for f, ss in sorted(groups.items()):
                    meas = sum(s["measured_us"] for s in ss)
                    pr = predicted(ss)
                    fam.append("| %s | %d | %s | %s | %d | %s | %s | %s |" % (
                        m, n, p, f, len(ss), fmt(meas), fmt(pr), ratio(pr, meas)))
    note = ["Predicted: the performance model for %s (bertc inspect --predict), with the constants "
            "docs/performance-model.md states." % (gpu or "no GPU"), ""]
    return head + note + whole + fam


def compile_table(work, models):
    """bertc compile's own account of each plan: wall seconds, and how many build jobs the cache had."""
    out = ["## Compile (`bertc compile`'s own total; the first compile of a kernel set is cold)", "",
           "| model | plan | seconds | kernels | build jobs cached |", "|---|---|---|---|---|"]
    for m in models:
        for p in PLANS + ("fp32", "batch"):
            text = read(work, "compile-%s-%s.err" % (m, p))
            if text is None:
                continue
            w = re.search(r"(\d+) kernels \((\d+) texts\).*?; ([0-9.]+) s \(.*\[(\d+) of (\d+) jobs cached\]", text)
            if not w:
                raise SummaryError("%s: no 'wrote PLAN: ...; S s (... [N of M jobs cached] ...)' line"
                                   % os.path.join(work, "compile-%s-%s.err" % (m, p)))
            out.append("| %s | %s | %s | %s kernels, %s texts | %s of %s |" % (m, p, w.group(3), w.group(1),
                                                                            w.group(2), w.group(4), w.group(5)))
    return out


def checks(work):
    out = ["## Checks", ""]
    failed = sorted(FAILED)
    for n in sorted(os.listdir(work)):
        if n.startswith("check-") and n.endswith(".out"):
            name = n[:-4]
            out.append("- %s: %s" % (name, "FAILED" if name in failed else "every step keeps to its launch contract"))
    for n in sorted(os.listdir(work)):
        if n.startswith("compare-") and n.endswith(".out"):
            lines = [ln for ln in read_raw(work, n).splitlines() if ln.strip()]
            out.append("- %s:" % n[:-4])
            out += ["  - " + ln for ln in lines] or ["  - (no output)"]
        if n.startswith("batch-") and n.endswith(".out"):
            lines = [ln for ln in read_raw(work, n).splitlines() if ln.startswith(("requests/s", "latency"))]
            out.append("- %s (packed batches): %s" % (n[:-4], "; ".join(lines) or "(no result)"))
    out.append("- commands that failed: %s" % (", ".join(failed) if failed else "none"))
    return out


def header(work):
    env = (read(work, "env.out") or "").strip().splitlines()
    tk = (read(work, "toolkit.out") or "").strip().splitlines()
    what = env[-1] if env else "unknown device"
    lines = ["# bertc on %s" % what, ""]
    if "emulated device" in what:
        lines += ["A dry run on the emulated device: its times are CPU times of the emulation and say "
                  "nothing about a GPU.", ""]
    if env:
        lines += ["GPU (nvidia-smi): `%s` — `%s`" % (env[0], what), ""]
    if tk:
        lines += ["Toolkit and compiler: " + "; ".join("`%s`" % t for t in tk), ""]
    return lines


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: gpu_summary.py WORK_DIR (the work folder of tools/gpu_validate.sh)", file=sys.stderr)
        return 2
    work = sys.argv[1]
    FAILED.update((read(work, "failed.txt") or "").split())
    models = models_of(work)
    if not models:
        print("gpu_summary: %s holds no bench-MODEL-default.out: not a gpu_validate.sh work folder" % work,
              file=sys.stderr)
        return 1
    try:
        lines = (header(work) + latency_table(work, models) + [""] + model_tables(work, models) + [""]
                 + compile_table(work, models) + [""] + checks(work))
    except SummaryError as e:
        print("gpu_summary: %s" % e, file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
