#!/usr/bin/env python3
"""check_layers — the architecture's rules, checked on a build.

    python3 tools/check_layers.py BUILD_DIR

docs/architecture.md states what may include what and which boundaries
the libraries keep; the Makefile compiles each part with only the include
paths it may use.  This script checks the result independently of the
Makefile, from what the build produced, so a rule cannot be lost by
editing a flag:

  includes   every object's dependency file (gcc -MMD) lists only headers
             of the parts its own part may use (RULES below);
  symbols    libbertc.so exports only bertc_* and references no symbol
             defined by the compiler, the emulated device or NVRTC;
             libtriton_bertc.so (the Triton backend) exports only the
             TRITONBACKEND_* entry points and references nothing of the
             compiler, the emulated device or NVRTC either;
  circles    inside each library, no two object files call each other,
             directly or around a longer loop (a circle means two files
             are one unit pretending to be two);
  lengths    no function outside tests/ is longer than 100 lines, counted
             from the line of its name to its closing brace.

Prints one line per violation and exits 1 if there is any; prints a
summary and exits 0 otherwise.  Standard library only; needs `nm`.
"""
import os
import re
import subprocess
import sys

# part -> the parts whose headers it may include (itself always).
RULES = {
    "runtime/common": [],
    "runtime/plan": ["runtime/common"],
    "runtime": ["runtime/common", "runtime/plan"],
    "runtime/emu/core": ["runtime/common"],
    "runtime/emu/device": ["runtime/common", "runtime/emu/core"],
    "compiler/ir": ["runtime/common"],
    "compiler/frontend": ["compiler/ir", "compiler", "runtime/common"],
    "compiler/passes": ["compiler/ir", "runtime/common"],
    "compiler/model": ["runtime/plan", "runtime/common"],
    "compiler/lower": ["compiler/ir", "compiler/codegen", "compiler/model", "runtime/plan", "runtime/common"],
    "compiler/codegen": ["compiler", "runtime/plan", "runtime/common"],
    "compiler": ["compiler/frontend", "compiler/ir", "compiler/passes", "compiler/lower", "compiler/codegen",
                 "compiler/model", "runtime", "runtime/plan", "runtime/common"],
    "runtime/triton": [],
}
# Single headers a part may use without the rest of their part: the Triton
# backend is a client of the runtime's public API and nothing else.
PUBLIC_HEADERS = {"runtime/triton": {"runtime/bertc.h"}}
# Headers of the top-level compiler folder that its sub-parts may use.
COMPILER_SHARED = {"compiler/fileutil.h"}
# Single headers a source may use beyond its part's rule: the soak
# (bertc bench --soak) reads the emulated device's counters through its
# public control surface, nothing else of the device.
EXCEPTIONS = {"compiler/cli_soak": {"runtime/emu/device/emudev.h"}}
# Generated sources belong to the part that owns their inputs.
GENERATED = {"gen": "compiler/codegen"}

MAX_FUNCTION_LINES = 100
LENGTH_DIRS = ["compiler", "runtime", "tools"]


def part_of(path):
    """The part a source or header path belongs to (None: outside the tree's parts)."""
    d = os.path.dirname(path)
    while d:
        if d in RULES:
            return d
        d = os.path.dirname(d)
    return None


def check_includes(build, errors):
    checked = 0
    for root, _, files in os.walk(build):
        for f in files:
            if not f.endswith(".d"):
                continue
            rel = os.path.relpath(os.path.join(root, f), build)
            top = rel.split(os.sep)[0]
            if top in ("tests", "tools"):
                continue
            obj_src = rel[:-2]
            if top not in GENERATED and not any(os.path.exists(obj_src + ext) for ext in (".c", ".S")):
                continue  # a stale object of a source that moved or went
            part = GENERATED.get(top) or part_of(obj_src + ".c")
            if part is None:
                continue
            allowed = set(RULES[part]) | {part}
            text = open(os.path.join(root, f)).read().replace("\\\n", " ")
            deps = text.split(":", 1)[1].split("\n", 1)[0].split() if ":" in text else []
            for dep in deps:
                if dep.startswith("/") or dep.startswith(build + "/") or dep.endswith((".c", ".S")):
                    continue
                if dep.startswith("compiler/") and part.startswith("compiler") and dep in COMPILER_SHARED:
                    continue
                if dep in EXCEPTIONS.get(obj_src, ()):
                    continue
                p = part_of(dep)
                if dep in PUBLIC_HEADERS.get(part, ()):
                    continue
                if p is not None and p not in allowed:
                    errors.append("includes: %s (%s) includes %s (%s), which %s may not use"
                                  % (obj_src, part, dep, p, part))
            checked += 1
    return checked


def nm(path, *flags):
    out = subprocess.run(["nm", *flags, path], capture_output=True, text=True, check=True).stdout
    return out


def defined_globals(archive):
    syms = set()
    for line in nm(archive, "--defined-only", "-g").splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms.add(parts[2])
    return syms


def dynamic_symbols(so):
    """(exported, undefined) dynamic symbols of a shared library."""
    exported, undefined = set(), set()
    for line in nm(so, "-D").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w"):
            undefined.add(parts[1].split("@")[0])
        elif len(parts) == 3 and parts[1] in "TDBRVWi":
            exported.add(parts[2].split("@")[0])
    return exported, undefined


def check_symbols(build, errors):
    foreign = set()
    for lib in ("libbertc_compiler.a", "libbertc_emu.a", "libbertc_emudev.a"):
        path = os.path.join(build, lib)
        if os.path.exists(path):
            foreign |= defined_globals(path)
    count = 0
    # library -> the prefix of what it may export; the backend is optional (make triton)
    for name, public in (("libbertc.so", "bertc_"), ("libtriton_bertc.so", "TRITONBACKEND_")):
        so = os.path.join(build, name)
        if name != "libbertc.so" and not os.path.exists(so):
            continue
        exported, undefined = dynamic_symbols(so)
        for s in sorted(exported):
            if not s.startswith(public):
                errors.append("symbols: %s exports %s (only %s* is public)" % (name, s, public))
        for s in sorted(undefined):
            if s in foreign or s.startswith("nvrtc") or s.startswith("emu_") or s.startswith("emudev_"):
                errors.append("symbols: %s references %s, a compiler, emulator or NVRTC symbol" % (name, s))
        count += len(exported)
    return count


def object_graph(archive):
    """object -> set of objects it calls, from one archive's symbol tables."""
    defs, uses, cur = {}, {}, None
    for line in nm(archive, "-g").splitlines():
        if line.endswith(":") and not line.startswith(" "):
            cur = line[:-1]
            uses[cur] = set()
            continue
        parts = line.split()
        if cur is None or not parts:
            continue
        if len(parts) == 2 and parts[0] == "U":
            uses[cur].add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRC":
            defs[parts[2]] = cur
    return {o: {defs[s] for s in u if s in defs and defs[s] != o} for o, u in uses.items()}


def cycles(graph):
    """Strongly connected components with more than one object (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_circles(build, errors):
    n = 0
    for lib in ("libbertc.a", "libbertc_compiler.a", "libbertc_emu.a", "libbertc_emudev.a", "libtriton_bertc.a"):
        path = os.path.join(build, lib)
        if not os.path.exists(path):
            continue
        n += 1
        for comp in cycles(object_graph(path)):
            errors.append("circles: in %s, %s call each other" % (lib, " <-> ".join(comp)))
    return n


def strip_code(text):
    """Comments, strings and character constants blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != "\\":
                    break
                j = k + 1
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


SIGNATURE = re.compile(r"(\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*$")


def functions(path):
    """(name, first line, last line) of each function definition in a C file."""
    code = strip_code(open(path, encoding="utf-8", errors="replace").read())
    found, depth, seg, open_fn = [], 0, 0, None
    for m in re.finditer(r"[{};]", code):
        ch = m.group()
        if ch == ";":
            if depth == 0:
                seg = m.end()
        elif ch == "{":
            if depth == 0:
                head = code[seg:m.start()]
                sig = SIGNATURE.search(head)
                if sig and "=" not in head and sig.group(1) not in ("if", "for", "while", "switch"):
                    open_fn = [sig.group(1), code.count("\n", 0, seg + sig.start(1)) + 1]
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                if open_fn:
                    found.append((open_fn[0], open_fn[1], code.count("\n", 0, m.start()) + 1))
                    open_fn = None
                seg = m.end()
    return found


def check_lengths(top, errors):
    count = 0
    for d in LENGTH_DIRS:
        for root, _, files in os.walk(os.path.join(top, d)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                path = os.path.join(root, f)
                for name, first, last in functions(path):
                    count += 1
                    if last - first + 1 > MAX_FUNCTION_LINES:
                        errors.append("lengths: %s:%d: %s is %d lines (at most %d)"
                                      % (os.path.relpath(path, top), first, name, last - first + 1,
                                         MAX_FUNCTION_LINES))
    return count


def main():
    if len(sys.argv) != 2:
        print("usage: check_layers.py BUILD_DIR", file=sys.stderr)
        return 2
    build = sys.argv[1].rstrip("/")
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    errors = []
    objs = check_includes(build, errors)
    exported = check_symbols(build, errors)
    libs = check_circles(build, errors)
    funcs = check_lengths(top, errors)
    for e in errors:
        print(e)
    if errors:
        return 1
    print("check_layers: %d objects' includes, %d exported symbols, %d libraries without circles, "
          "%d functions of at most %d lines" % (objs, exported, libs, funcs, MAX_FUNCTION_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
