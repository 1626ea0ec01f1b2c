"""Golden-file and .npy helpers for tests/cli/cli.sh (standard library only).

  npy_golden.py ids|types|mask GOLDEN CASE      print the case's inputs
  npy_golden.py compare GOLDEN CASE LAST.npy [POOLED.npy]
      exit 0 when max |got - want| <= 1e-5 * max |want| for each output.
  npy_golden.py text GOLDEN CASE                 the case's sentence(s), one per line
  npy_golden.py tokens GOLDEN CASE JSON          exit 0 when the "ids" and "type_ids"
      of bertc's --json output equal the case's input_ids and token types
  npy_golden.py embedding GOLDEN CASE cls|mean|pooler 0|1 E.npy RTOL
      exit 0 when E (the pooled, optionally L2-normalised, outputs of
      transformers for the case) matches within RTOL * max |want|
  npy_golden.py logits GOLDEN CASE L.npy|JSON TOL
      exit 0 when a head's logits (an .npy, or the "logits" of bertc's --json
      output) match the case's within TOL * max(max |want|, 1)
  npy_golden.py sentence GOLDEN CASE JSON TOL
      exit 0 when the "embedding" of bertc's --json output matches the case's
      sentence_embedding (sentence-transformers') within TOL * max |want|

It reads both formats independently of bertc's C code, so a bug in the C
.npy writer or golden reader cannot cancel out.
"""
import ast
import struct
import sys


def read_header(path):
    data = open(path, "rb").read()
    (hlen,) = struct.unpack("<I", data[8:12])
    return data[12:12 + hlen].decode("utf-8")


def read_golden(path):
    data = open(path, "rb").read()
    pos = 0

    def take(n):
        nonlocal pos
        if pos + n > len(data):
            raise SystemExit(f"{path}: truncated at byte {pos}")
        chunk = data[pos:pos + n]
        pos += n
        return chunk

    if take(4) != b"BGLD":
        raise SystemExit(f"{path}: bad magic")
    (version,) = struct.unpack("<I", take(4))
    if version != 1:
        raise SystemExit(f"{path}: version {version}")
    (hlen,) = struct.unpack("<I", take(4))
    take(hlen)
    (ncases,) = struct.unpack("<I", take(4))
    cases = []
    for _ in range(ncases):
        (nlen,) = struct.unpack("<I", take(4))
        name = take(nlen).decode()
        length, hidden, flags = struct.unpack("<III", take(12))
        case = {"name": name, "len": length, "hidden": hidden}
        case["ids"] = struct.unpack(f"<{length}i", take(4 * length))
        case["types"] = struct.unpack(f"<{length}i", take(4 * length)) if flags & 1 else None
        case["mask"] = struct.unpack(f"<{length}i", take(4 * length)) if flags & 2 else None
        case["last"] = struct.unpack(f"<{length * hidden}f", take(4 * length * hidden))
        case["pooled"] = struct.unpack(f"<{hidden}f", take(4 * hidden)) if flags & 4 else None
        for bit, key in ((8, "logits"), (16, "sentence")):  # tools/make_family_goldens.py
            case[key] = None
            if flags & bit:
                (n,) = struct.unpack("<I", take(4))
                case[key] = struct.unpack(f"<{n}f", take(4 * n))
        if flags & ~31:
            raise SystemExit(f"{path}: case {name}: unknown flags {flags:#x}")
        cases.append(case)
    return cases


def read_npy(path):
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY" or data[6] != 1:
        raise SystemExit(f"{path}: not a version-1 .npy file")
    (hlen,) = struct.unpack("<H", data[8:10])
    header = ast.literal_eval(data[10:10 + hlen].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        raise SystemExit(f"{path}: unexpected header {header}")
    if (10 + hlen) % 64:
        raise SystemExit(f"{path}: data not 64-byte aligned")
    count = 1
    for d in header["shape"]:
        count *= d
    body = data[10 + hlen:]
    if len(body) != 4 * count:
        raise SystemExit(f"{path}: {len(body)} data bytes for shape {header['shape']}")
    return header["shape"], struct.unpack(f"<{count}f", body)


def close(name, got, want):
    scale = max(abs(v) for v in want)
    diff = max(abs(a - b) for a, b in zip(got, want))
    if not diff <= 1e-5 * scale:
        raise SystemExit(f"{name}: max diff {diff:.3g} > 1e-5 * {scale:.3g}")


def main(argv):
    cmd, golden, index = argv[1], argv[2], int(argv[3])
    case = read_golden(golden)[index]
    if cmd == "text":
        import json
        for line in read_header(golden).splitlines():
            head = "case %s text " % case["name"]
            if line.startswith(head):
                rest = line[len(head):]
                for t in json.loads(rest[:rest.rindex("]") + 1]):
                    print(t)
                return
        raise SystemExit("no text for case %s" % case["name"])
    if cmd == "tokens":
        import json
        got = json.loads(open(argv[4], encoding="utf-8").read())
        types = case["types"] if case["types"] is not None else [0] * case["len"]
        if list(got["ids"]) != list(case["ids"]) or list(got["type_ids"]) != list(types):
            raise SystemExit("ids %s / types %s, transformers %s / %s" % (got["ids"], got["type_ids"], list(case["ids"]), list(types)))
        print("ok")
        return
    if cmd == "embedding":
        mode, norm, rtol = argv[4], argv[5] == "1", float(argv[7])
        H, n = case["hidden"], case["len"]
        last = case["last"]
        if mode == "pooler":
            want = list(case["pooled"])
        elif mode == "cls":
            want = list(last[:H])
        else:
            want = [sum(last[r * H + c] for r in range(n)) / n for c in range(H)]
        if norm:
            s = sum(v * v for v in want) ** 0.5
            want = [v / max(s, 1e-12) for v in want]
        shape, got = read_npy(argv[6])
        if tuple(shape) != (H,):
            raise SystemExit("embedding shape %s" % (shape,))
        scale = max(abs(v) for v in want)
        diff = max(abs(a - b) for a, b in zip(got, want))
        if not diff <= rtol * scale:
            raise SystemExit("%s%s: max diff %.3g > %g * %.3g" % (mode, " normalised" if norm else "", diff, rtol, scale))
        print("ok")
        return
    if cmd == "logits":
        want, tol = case["logits"], float(argv[5])
        if want is None:
            raise SystemExit("the case has no logits")
        if argv[4].endswith(".npy"):
            _, got = read_npy(argv[4])
        else:
            import json
            got = json.load(open(argv[4]))["logits"]
        if len(got) != len(want):
            raise SystemExit("%d logits, the golden has %d" % (len(got), len(want)))
        scale = max(max(abs(v) for v in want), 1.0)
        diff = max(abs(a - b) for a, b in zip(got, want))
        if not diff <= tol * scale:
            raise SystemExit("logits max diff %.3g > %g * %.3g" % (diff, tol, scale))
        print("ok")
        return
    if cmd == "sentence":
        import json
        want, tol = case["sentence"], float(argv[5])
        if want is None:
            raise SystemExit("the case has no sentence_embedding")
        got = json.load(open(argv[4]))["embedding"]
        if len(got) != len(want):
            raise SystemExit("an embedding of %d values, the golden has %d" % (len(got), len(want)))
        scale = max(abs(v) for v in want)
        diff = max(abs(a - b) for a, b in zip(got, want))
        if not diff <= tol * scale:
            raise SystemExit("sentence_embedding max diff %.3g > %g * %.3g" % (diff, tol, scale))
        print("ok")
        return
    if cmd in ("ids", "types", "mask"):
        values = case[cmd]
        print(" ".join(str(v) for v in values) if values is not None else "")
        return
    shape, last = read_npy(argv[4])
    if tuple(shape) != (case["len"], case["hidden"]):
        raise SystemExit(f"last_hidden_state shape {shape}, expected {(case['len'], case['hidden'])}")
    close("last_hidden_state", last, case["last"])
    if len(argv) > 5 and case["pooled"] is not None:
        shape, pooled = read_npy(argv[5])
        if tuple(shape) != (case["hidden"],):
            raise SystemExit(f"pooler_output shape {shape}")
        close("pooler_output", pooled, case["pooled"])
    print("ok")


if __name__ == "__main__":
    main(sys.argv)
