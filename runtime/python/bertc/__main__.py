"""python -m bertc ARGS: the bertc command that ships inside the package (import, compile, inspect, run, ...)."""
import os
import sys

from . import _native


def main():
    exe = _native.cli_path()
    if not exe:
        sys.exit("bertc: no bertc command in this package, in $BERTC or on PATH")
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
