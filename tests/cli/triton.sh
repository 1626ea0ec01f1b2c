#!/bin/sh
# The Triton backend in the real Triton Inference Server (docs/serving.md):
# `bertc export-triton` writes a repository with MiniLM on the emulated
# device, PyPI's tritonserver (nvidia-pytriton) serves it on 127.0.0.1, and
# tests/triton/test_server.py checks text and id requests over HTTP and
# gRPC against `bertc run`, 8 concurrent clients, malformed requests, and a
# clean stop.  The in-process checks of the same backend (and its sanitizer
# run) are tests/triton/test_backend.c.
. tests/cli/lib/common.sh
. tests/cli/lib/serve.sh

serve_ready triton numpy pytest tritonclient pytriton || exit 0
serve_pytest triton/ tests/triton/test_server.py
