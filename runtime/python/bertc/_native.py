"""_native -- the runtime's C API (runtime/bertc.h) through ctypes.

The package is pure Python over the shared runtime: the wheel carries
libbertc.so.0 and, beside it, libbertc_emudev.so (which the runtime finds
next to itself) and the bertc command, in bertc/_lib/.  No CPython
extension is compiled, so one wheel serves every Python 3 version.

This module only declares: every function's argument and result types,
the four structs the API passes by pointer (laid out as bertc.h lays
them out; ctypes applies the platform's C alignment), and where the
library is.  Everything with behaviour lives in __init__.py.

ctypes.CDLL releases the GIL around each call, so requests on different
threads (each with its own context, as the runtime requires) run at once.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
LIB_DIR = os.path.join(_HERE, "_lib")

c_int, c_int64, c_size_t, c_char_p, c_void_p = (ctypes.c_int, ctypes.c_int64, ctypes.c_size_t, ctypes.c_char_p,
                                                  ctypes.c_void_p)
P_INT32 = ctypes.POINTER(ctypes.c_int32)
P_FLOAT = ctypes.POINTER(ctypes.c_float)

STATUS_NAMES = {0: "ok", 1: "invalid argument", 2: "bad plan", 3: "bad request", 4: "no device", 5: "device",
                6: "out of memory"}
DEVICE_CUDA, DEVICE_EMULATED = 0, 1


class PlanOptions(ctypes.Structure):
    _fields_ = [("expected_sha256", c_char_p)]


class OutputInfo(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("per_token", c_int), ("cols", c_int64)]


class ContextOptions(ctypes.Structure):
    # bertc.h's bertc_context_options, field for field (load() checks the size)
    _fields_ = [("device", c_int), ("device_ordinal", c_int), ("capture_on_first_use", c_int),
                ("workspace_bytes", c_size_t), ("timing", c_int), ("pdl", c_int), ("time_algorithms", c_int),
                ("outputs", c_char_p), ("driver_library", c_char_p), ("blaslt_library", c_char_p)]


class Request(ctypes.Structure):
    _fields_ = [("input_ids", P_INT32), ("token_type_ids", P_INT32), ("attention_mask", P_INT32), ("len", c_int64)]


class BatchOptions(ctypes.Structure):
    # bertc.h's bertc_batch_options (bertc_encode_batch)
    _fields_ = [("threads", c_int), ("max_len", c_int64)]


# name: (result type, argument types)
_SIGNATURES = {
    "bertc_status_name": (c_char_p, [c_int]),
    "bertc_plan_options_init": (None, [ctypes.POINTER(PlanOptions)]),
    "bertc_plan_open_with": (c_int, [c_char_p, ctypes.POINTER(PlanOptions), ctypes.POINTER(c_void_p), c_char_p,
                                     c_size_t]),
    "bertc_plan_close": (None, [c_void_p]),
    "bertc_plan_sha256": (c_char_p, [c_void_p]),
    "bertc_plan_model_name": (c_char_p, [c_void_p]),
    "bertc_plan_hidden": (c_int64, [c_void_p]),
    "bertc_plan_vocab_size": (c_int64, [c_void_p]),
    "bertc_plan_type_vocab_size": (c_int64, [c_void_p]),
    "bertc_plan_bucket_count": (c_int, [c_void_p]),
    "bertc_plan_bucket_len": (c_int, [c_void_p, c_int]),
    "bertc_plan_output_count": (c_int, [c_void_p]),
    "bertc_plan_output_info": (c_int, [c_void_p, c_int, ctypes.POINTER(OutputInfo)]),
    "bertc_plan_output_index": (c_int, [c_void_p, c_char_p]),
    "bertc_plan_has_tokenizer": (c_int, [c_void_p]),
    "bertc_context_options_init": (None, [ctypes.POINTER(ContextOptions)]),
    "bertc_context_create": (c_int, [c_void_p, ctypes.POINTER(ContextOptions), ctypes.POINTER(c_void_p), c_char_p,
                                     c_size_t]),
    "bertc_context_destroy": (None, [c_void_p]),
    "bertc_context_error": (c_char_p, [c_void_p]),
    "bertc_context_image_arch": (c_char_p, [c_void_p]),
    "bertc_context_image_kind": (c_char_p, [c_void_p]),
    "bertc_infer": (c_int, [c_void_p, ctypes.POINTER(Request)]),
    "bertc_output_read": (c_int, [c_void_p, c_int, P_FLOAT, c_size_t]),
    "bertc_encoding_create": (c_void_p, []),
    "bertc_encoding_free": (None, [c_void_p]),
    "bertc_encode": (c_int, [c_void_p, c_void_p, c_char_p, c_char_p, c_int64, c_char_p, c_size_t]),
    "bertc_encoding_len": (c_int64, [c_void_p]),
    "bertc_encoding_ids": (P_INT32, [c_void_p]),
    "bertc_encoding_type_ids": (P_INT32, [c_void_p]),
    "bertc_encoding_token": (c_char_p, [c_void_p, c_int64]),
    "bertc_encoding_truncated": (c_int, [c_void_p]),
    # packed batches (token buckets)
    "bertc_plan_max_batch": (c_int, [c_void_p]),
    "bertc_plan_max_batch_tokens": (c_int64, [c_void_p]),
    "bertc_infer_batch": (c_int, [c_void_p, ctypes.POINTER(Request), c_size_t]),
    "bertc_batch_output_read": (c_int, [c_void_p, c_int, c_size_t, P_FLOAT, c_size_t]),
    "bertc_batch_options_init": (None, [ctypes.POINTER(BatchOptions)]),
    "bertc_encode_batch": (c_int, [c_void_p, ctypes.POINTER(c_void_p), ctypes.POINTER(c_char_p),
                                   ctypes.POINTER(c_char_p), c_size_t, ctypes.POINTER(BatchOptions), c_char_p,
                                   c_size_t]),
}

_lib = None


def library_path():
    """$BERTC_LIBRARY, else the copy inside the package."""
    return os.environ.get("BERTC_LIBRARY") or os.path.join(LIB_DIR, "libbertc.so.0")


def lib():
    """The loaded runtime, every function typed (loaded on first use)."""
    global _lib
    if _lib is None:
        path = library_path()
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            raise ImportError("bertc: cannot load the runtime library %s (%s); set BERTC_LIBRARY to a libbertc.so"
                              % (path, e)) from None
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(handle, name)
            fn.restype = res
            fn.argtypes = args
        _check_layout(handle, path)
        _lib = handle
    return _lib


def _check_layout(handle, path):
    """ContextOptions must be bertc.h's struct: the library's init writes no
    byte past it, and its defaults land in the fields they belong to."""
    size = ctypes.sizeof(ContextOptions)
    buf = (ctypes.c_ubyte * (size + 64))(*([0xAB] * (size + 64)))
    opt = ContextOptions.from_buffer(buf)
    handle.bertc_context_options_init(ctypes.byref(opt))
    grown = any(b != 0xAB for b in bytes(buf)[size:])
    if grown or opt.workspace_bytes == 0 or opt.pdl != 1 or opt.time_algorithms != 1 or opt.outputs is not None \
            or opt.driver_library is not None or opt.blaslt_library is not None:
        raise ImportError("bertc: %s does not match this package's declarations (bertc_context_options differs);"
                          " use the library the package was built with" % path)


def cli_path():
    """The bertc command: $BERTC, else the copy inside the package, else bertc on PATH."""
    env = os.environ.get("BERTC")
    if env:
        return env
    bundled = os.path.join(LIB_DIR, "bertc")
    if os.access(bundled, os.X_OK):
        return bundled
    import shutil
    return shutil.which("bertc")
