"""Golden-file and .npy helpers for tests/cli/cli.sh (standard library only).

  npy_golden.py ids|types|mask GOLDEN CASE      print the case's inputs
  npy_golden.py compare GOLDEN CASE LAST.npy [POOLED.npy]
      exit 0 when max |got - want| <= 1e-5 * max |want| for each output.

It reads both formats independently of bertc's C code, so a bug in the C
.npy writer or golden reader cannot cancel out.
"""
import ast
import struct
import sys


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
