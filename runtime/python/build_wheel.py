#!/usr/bin/env python3
"""build_wheel -- the Python package bertc as a wheel, with the standard library only.

    python3 runtime/python/build_wheel.py --build build --version 0.1.0 --output build/python/bertc-...whl

(`make python` runs it.)  A wheel is a zip file with a fixed layout (the
binary distribution format, PEP 427 / PEP 491): the package's files, and a
NAME-VERSION.dist-info folder holding METADATA (core metadata), WHEEL (the
format version and the tag) and RECORD (every file's SHA-256 and size).
Writing that zip needs no build backend and no network, so `make python`
works offline and on the CI machine before anything is installed.

What goes in:

    bertc/__init__.py, _native.py, __main__.py   runtime/python/bertc/
    bertc/_version.py                           written here from --version
    bertc/_lib/libbertc.so.0                    the runtime (BUILD/libbertc.so.0)
    bertc/_lib/libbertc_emudev.so               the emulated device, found by the
                                                runtime beside itself
    bertc/_lib/bertc                            the command, for bertc.compile()

The tag is py3-none-linux_<machine>: pure Python over native libraries that
no Python ABI touches, built for this machine's architecture and its
system libraries (glibc, libutf8proc, libyaml), so the wheel is for the
distribution it was built on, not a manylinux wheel.  The zip is
reproducible: entries are sorted and dated 1980-01-01 (or
SOURCE_DATE_EPOCH), so the same inputs give the same bytes.  The output is
written to a temporary file and renamed, so a failed build leaves none.
"""
import argparse
import base64
import hashlib
import os
import platform
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "sha256=" + digest


def metadata(version):
    readme = open(os.path.join(HERE, "README.md"), encoding="utf-8").read()
    return ("Metadata-Version: 2.1\n"
            "Name: bertc\n"
            "Version: %s\n"
            "Summary: Run bertc plans (BERT-family encoders compiled to CUDA kernels) from Python\n"
            "License: see the bertc repository\n"
            "Requires-Python: >=3.8\n"
            "Requires-Dist: numpy\n"
            "Description-Content-Type: text/markdown\n"
            "\n%s" % (version, readme))


def wheel_tag():
    machine = platform.machine().lower()
    return "py3-none-linux_%s" % machine


def collect(build, version):
    """(archive name, bytes, unix mode) of every file of the package."""
    files = []
    src = os.path.join(HERE, "bertc")
    for name in sorted(os.listdir(src)):
        if name.endswith(".py"):
            files.append(("bertc/" + name, open(os.path.join(src, name), "rb").read(), 0o644))
    files.append(("bertc/_version.py", ('__version__ = "%s"\n' % version).encode(), 0o644))
    for name, arc, mode in (("libbertc.so.0", "libbertc.so.0", 0o755), ("libbertc_emudev.so", "libbertc_emudev.so", 0o755),
                            ("bertc", "bertc", 0o755)):
        path = os.path.join(build, name)
        if not os.path.isfile(path):
            sys.exit("build_wheel: %s is missing (run make first)" % path)
        files.append(("bertc/_lib/" + arc, open(path, "rb").read(), mode))
    dist = "bertc-%s.dist-info" % version
    files.append((dist + "/METADATA", metadata(version).encode("utf-8"), 0o644))
    files.append((dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: bertc build_wheel.py\nRoot-Is-Purelib: false\n"
                                    "Tag: %s\n" % wheel_tag()).encode(), 0o644))
    return files, dist


def write(output, files, dist):
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    record = "".join("%s,%s,%d\n" % (name, record_hash(data), len(data)) for name, data, _ in files)
    record += dist + "/RECORD,,\n"
    entries = sorted(files) + [(dist + "/RECORD", record.encode(), 0o644)]
    tmp = output + ".tmp-%d" % os.getpid()
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data, mode in entries:
                info = zipfile.ZipInfo(name, stamp)
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data)
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    ap = argparse.ArgumentParser(description="Build the bertc wheel (standard library only).")
    ap.add_argument("--build", required=True, help="the build folder (libbertc.so.0, libbertc_emudev.so, bertc)")
    ap.add_argument("--version", required=True)
    ap.add_argument("--output", required=True, help="the .whl to write")
    a = ap.parse_args()
    files, dist = collect(a.build, a.version)
    expected = "bertc-%s-%s.whl" % (a.version, wheel_tag())
    if os.path.basename(a.output) != expected:
        sys.exit("build_wheel: the wheel for this machine is named %s, not %s" % (expected, os.path.basename(a.output)))
    write(a.output, files, dist)
    print("build_wheel: %s (%d files)" % (a.output, len(files) + 1))


if __name__ == "__main__":
    main()
