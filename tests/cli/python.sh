#!/bin/sh
# The Python package (runtime/python, docs/python.md): the wheel `make
# python` built installs with pip, and its tests (tests/python/test_bertc.py)
# pass against that installed copy on the emulated device, including the
# comparison with sentence-transformers' goldens for MiniLM.
. tests/cli/lib/common.sh
. tests/cli/lib/serve.sh

serve_ready python numpy pytest || exit 0
serve_install_wheel || exit 0
serve_pytest python/ tests/python/test_bertc.py
