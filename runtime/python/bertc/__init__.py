"""bertc -- compiled BERT-family encoders from Python.

    import bertc
    plan = bertc.Plan("all-MiniLM-L6-v2.plan", device="emu")   # "cuda" on a GPU
    emb = plan.encode(["How are you?", "Fine, thanks."])         # numpy [2, 384]
    out = plan.run(input_ids=[[101, 7592, 2088, 102]])           # {"last_hidden_state": [1, 4, 384], ...}
    enc = plan.tokenize("Hello world")                           # ids, type_ids, tokens
    bertc.compile("path/to/hf_model", "model.plan", archs=["sm_80", "emu"])

A Plan is the runtime's bertc_plan (runtime/bertc.h, docs/runtime.md): the
mapped, checked plan file, shared by every thread.  The runtime's other rule
-- one context per thread -- is kept here: each thread that uses a Plan gets
its own context (and tokenizer encoding) on first use, kept in a
thread-local slot and destroyed when the thread ends or the plan closes.
Calls release the GIL, so threads run requests at the same time.

Errors are exceptions carrying the runtime's own message: BadPlanError,
BadRequestError (also a ValueError), NoDeviceError, DeviceError,
OutOfMemoryError, InvalidArgumentError; all are BertcError, whose `status`
is the runtime's status name.  compile() failures are CompileError with the
command's message.

encode() sends `batch_size` texts at a time: tokenised together on every
core (bertc_encode_batch), then, when the plan has token buckets (bertc
compile --batch-tokens), run as packed batches -- as many texts per graph
launch as the largest token bucket holds (bertc_infer_batch) -- else one
request per text.  The embeddings are the same bits either way.
docs/python.md has the complete guide.
"""
import ctypes
import os
import subprocess
import tempfile
import threading
import weakref

import numpy as np

from . import _native

try:
    from ._version import __version__
except ImportError:  # running from the source tree
    __version__ = "dev"

__all__ = ["Plan", "Encoding", "OutputSpec", "compile", "BertcError", "InvalidArgumentError", "BadPlanError",
           "BadRequestError", "NoDeviceError", "DeviceError", "OutOfMemoryError", "CompileError"]

_ERR_CAP = 2048


class BertcError(Exception):
    """A failure reported by the runtime or the bertc command; `status` names the runtime's status."""

    def __init__(self, message, status="error"):
        super().__init__(message)
        self.status = status


class InvalidArgumentError(BertcError, ValueError):
    """The API was called with something it cannot use."""


class BadPlanError(BertcError):
    """The plan file is missing, damaged, of another version, or not the pinned one."""


class BadRequestError(BertcError, ValueError):
    """The runtime refused a request: too long, an id beyond the vocabulary, invalid text, ..."""


class NoDeviceError(BertcError):
    """No driver, no such device, or no kernel image in the plan for it."""


class DeviceError(BertcError):
    """A CUDA driver or cuBLASLt call failed."""


class OutOfMemoryError(BertcError, MemoryError):
    """A host or device allocation failed."""


class CompileError(BertcError):
    """bertc import/compile failed; the message is the command's; `exit_status` its exit status."""

    def __init__(self, message, exit_status):
        super().__init__(message, "compile failed")
        self.exit_status = exit_status


_BY_STATUS = {1: InvalidArgumentError, 2: BadPlanError, 3: BadRequestError, 4: NoDeviceError, 5: DeviceError,
              6: OutOfMemoryError}


def _fail(status, message):
    cls = _BY_STATUS.get(status, BertcError)
    raise cls(message, _native.STATUS_NAMES.get(status, "status %d" % status))


def _text_bytes(what, text):
    if not isinstance(text, str):
        raise TypeError("%s must be a str, not %s" % (what, type(text).__name__))
    nul = text.find("\0")
    if nul >= 0:
        raise BadRequestError("%s has a NUL character at position %d" % (what, nul), "bad request")
    # Lone surrogates pass through as invalid UTF-8, which the runtime refuses with the byte offset.
    return text.encode("utf-8", "surrogatepass")


class OutputSpec:
    """One plan output: per_token outputs are [length, cols] per sequence, the others [cols]."""
    __slots__ = ("name", "index", "per_token", "cols")

    def __init__(self, name, index, per_token, cols):
        self.name, self.index, self.per_token, self.cols = name, index, per_token, cols

    def __repr__(self):
        return "OutputSpec(%r, %s, cols=%d)" % (self.name, "per token" if self.per_token else "per sequence",
                                                self.cols)


class Encoding:
    """A tokenised text: ids and type_ids (int32 arrays), tokens (str), truncated (bool)."""
    __slots__ = ("ids", "type_ids", "tokens", "truncated")

    def __init__(self, ids, type_ids, tokens, truncated):
        self.ids, self.type_ids, self.tokens, self.truncated = ids, type_ids, tokens, truncated

    def __len__(self):
        return len(self.ids)

    def __repr__(self):
        return "Encoding(tokens=%r%s)" % (self.tokens, ", truncated" if self.truncated else "")


class _Context:
    """A runtime context and a tokenizer encoding; one thread uses it at a time (the lock)."""

    def __init__(self, lib, plan_ptr, opts):
        self.lib, self.lock, self.ptr, self.enc = lib, threading.Lock(), None, None
        self.encs = []  # encode()'s batch of encodings, grown on demand
        err = ctypes.create_string_buffer(_ERR_CAP)
        ptr = ctypes.c_void_p()
        st = lib.bertc_context_create(plan_ptr, ctypes.byref(opts), ctypes.byref(ptr), err, _ERR_CAP)
        if st:
            _fail(st, err.value.decode("utf-8", "replace"))
        self.ptr = ptr
        self.enc = lib.bertc_encoding_create()
        if not self.enc:
            self.close()
            raise OutOfMemoryError("out of memory", "out of memory")

    def error(self):
        return (self.lib.bertc_context_error(self.ptr) or b"").decode("utf-8", "replace")

    def close(self):
        with self.lock:
            if self.ptr:
                self.lib.bertc_context_destroy(self.ptr)
                self.ptr = None
            if self.enc:
                self.lib.bertc_encoding_free(self.enc)
                self.enc = None
            for e in self.encs:
                self.lib.bertc_encoding_free(e)
            self.encs = []

    def encodings(self, n):
        """At least n encodings for a batch (kept for the next call)."""
        while len(self.encs) < n:
            e = self.lib.bertc_encoding_create()
            if not e:
                raise OutOfMemoryError("out of memory", "out of memory")
            self.encs.append(e)
        return self.encs[:n]

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class Plan:
    """A compiled plan, ready to answer requests on a device ("cuda" or "emu").

    path             the plan file (bertc compile's output)
    device           "cuda" (a GPU; the plan needs its architecture) or "emu"
                     (the emulated device: the same kernels on the CPU, slowly)
    device_ordinal   the CUDA device number
    expected_sha256  refuse a plan whose SHA-256 differs (docs/security.md)
    """

    def __init__(self, path, device="cuda", device_ordinal=0, expected_sha256=None):
        self._ptr = None
        self._lib = _native.lib()
        if device not in ("cuda", "emu"):
            raise InvalidArgumentError("device must be 'cuda' or 'emu', not %r" % (device,), "invalid argument")
        self.path, self.device = os.fspath(path), device
        opts = _native.PlanOptions()
        self._lib.bertc_plan_options_init(ctypes.byref(opts))
        if expected_sha256 is not None:
            opts.expected_sha256 = expected_sha256.encode("ascii")
        err = ctypes.create_string_buffer(_ERR_CAP)
        ptr = ctypes.c_void_p()
        st = self._lib.bertc_plan_open_with(os.fsencode(self.path), ctypes.byref(opts), ctypes.byref(ptr), err,
                                            _ERR_CAP)
        if st:
            _fail(st, err.value.decode("utf-8", "replace"))
        self._ptr = ptr
        self._ctx_opts = _native.ContextOptions()
        self._lib.bertc_context_options_init(ctypes.byref(self._ctx_opts))
        self._ctx_opts.device = _native.DEVICE_EMULATED if device == "emu" else _native.DEVICE_CUDA
        self._ctx_opts.device_ordinal = device_ordinal
        self._lock = threading.Lock()
        self._local = threading.local()
        self._contexts = weakref.WeakSet()
        self.outputs = {}
        for i in range(self._lib.bertc_plan_output_count(ptr)):
            info = _native.OutputInfo()
            if self._lib.bertc_plan_output_info(ptr, i, ctypes.byref(info)) == 0:
                name = info.name.decode("utf-8")
                self.outputs[name] = OutputSpec(name, i, bool(info.per_token), int(info.cols))

    # ------------------------------------------------------------ queries
    def _plan(self):
        if not self._ptr:
            raise InvalidArgumentError("the plan %s is closed" % self.path, "invalid argument")
        return self._ptr

    @property
    def model_name(self):
        return self._lib.bertc_plan_model_name(self._plan()).decode("utf-8")

    @property
    def sha256(self):
        return self._lib.bertc_plan_sha256(self._plan()).decode("ascii")

    @property
    def hidden(self):
        return int(self._lib.bertc_plan_hidden(self._plan()))

    @property
    def vocab_size(self):
        return int(self._lib.bertc_plan_vocab_size(self._plan()))

    @property
    def buckets(self):
        p = self._plan()
        return [self._lib.bertc_plan_bucket_len(p, i) for i in range(self._lib.bertc_plan_bucket_count(p))]

    @property
    def max_len(self):
        """The longest request the plan takes (its largest bucket)."""
        return self.buckets[-1]

    @property
    def has_tokenizer(self):
        return bool(self._lib.bertc_plan_has_tokenizer(self._plan()))

    @property
    def image(self):
        """(arch, kind) of the kernel image this thread's context runs: ("emu", "emu"), ("sm_86", "cubin"), ..."""
        with self._use() as c:
            return (self._lib.bertc_context_image_arch(c.ptr).decode(),
                    self._lib.bertc_context_image_kind(c.ptr).decode())

    def __repr__(self):
        state = "closed" if not self._ptr else "%s, %s" % (self.model_name, self.device)
        return "bertc.Plan(%r: %s)" % (self.path, state)

    # --------------------------------------------------------- contexts
    class _Using:
        def __init__(self, ctx):
            self.ctx = ctx

        def __enter__(self):
            self.ctx.lock.acquire()
            if not self.ctx.ptr:
                self.ctx.lock.release()
                raise InvalidArgumentError("the plan is closed", "invalid argument")
            return self.ctx

        def __exit__(self, *exc):
            self.ctx.lock.release()

    def _use(self):
        """This thread's context (created on first use), locked for the duration of a `with`."""
        ctx = getattr(self._local, "ctx", None)
        if ctx is None:
            with self._lock:
                ctx = _Context(self._lib, self._plan(), self._ctx_opts)
                self._contexts.add(ctx)
            self._local.ctx = ctx
        return Plan._Using(ctx)

    def close(self):
        """Frees every thread's context and this handle; the Plan cannot be used afterwards."""
        if not getattr(self, "_ptr", None):
            return
        with self._lock:
            for ctx in list(self._contexts):
                ctx.close()
            self._lib.bertc_plan_close(self._ptr)
            self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    # ------------------------------------------------------------- text
    def _encode(self, ctx, what, text, pair, max_len):
        t = _text_bytes(what, text)
        p = None if pair is None else _text_bytes(what + " pair", pair)
        err = ctypes.create_string_buffer(_ERR_CAP)
        st = self._lib.bertc_encode(self._plan(), ctx.enc, t, p, max_len, err, _ERR_CAP)
        if st:
            _fail(st, "%s: %s" % (what, err.value.decode("utf-8", "replace")))
        return int(self._lib.bertc_encoding_len(ctx.enc))

    def tokenize(self, texts, pairs=None, max_len=0):
        """Encoding (or a list of them) from the plan's tokenizer: Hugging Face's ids, [CLS] text [SEP] [pair [SEP]].

        max_len > 0 truncates to that many tokens; 0 uses the model's maximum, capped at the plan's longest bucket.
        """
        single, texts, pairs = _as_list(texts, pairs)
        out = []
        with self._use() as c:
            for i, text in enumerate(texts):
                n = self._encode(c, "text %d" % i, text, pairs[i] if pairs else None, max_len)
                ids = np.ctypeslib.as_array(self._lib.bertc_encoding_ids(c.enc), (n,)).copy() if n else \
                    np.zeros(0, np.int32)
                types = np.ctypeslib.as_array(self._lib.bertc_encoding_type_ids(c.enc), (n,)).copy() if n else \
                    np.zeros(0, np.int32)
                tokens = [self._lib.bertc_encoding_token(c.enc, k).decode("utf-8") for k in range(n)]
                out.append(Encoding(ids, types, tokens, bool(self._lib.bertc_encoding_truncated(c.enc))))
        return out[0] if single else out

    def _pooling(self, pooling):
        if pooling is None:
            pooling = "model" if "sentence_embedding" in self.outputs else \
                "pooler" if "pooler_output" in self.outputs else "cls"
        source = {"model": "sentence_embedding", "pooler": "pooler_output", "cls": "last_hidden_state",
                  "mean": "last_hidden_state"}.get(pooling)
        if source is None:
            raise InvalidArgumentError("pooling must be None, 'model', 'pooler', 'cls' or 'mean', not %r"
                                       % (pooling,), "invalid argument")
        if source not in self.outputs:
            raise InvalidArgumentError("pooling %r needs the output %s, which this plan does not have (it has: %s)"
                                       % (pooling, source, ", ".join(self.outputs)), "invalid argument")
        return pooling, self.outputs[source]

    def encode(self, texts, batch_size=32, pairs=None, pooling=None, normalize=False, max_len=0):
        """Embeddings of texts: a float32 array [len(texts), dim] ([dim] for one str).

        pooling   None: the plan's sentence_embedding (sentence-transformers models: their own pooling and
                  normalisation, compiled into the plan), else pooler_output, else the [CLS] row;
                  or 'model', 'pooler', 'cls', 'mean' (the mean of the text's token rows)
        normalize divide each embedding by its L2 norm
        batch_size how many texts are tokenised together (on every core) and sent to the device together: as
                  packed batches when the plan has token buckets, else one request each
        """
        single, texts, pairs = _as_list(texts, pairs)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError("batch_size must be a positive int, not %r" % (batch_size,), "invalid argument")
        pooling, spec = self._pooling(pooling)
        result = np.empty((len(texts), spec.cols), np.float32)
        with self._use() as c:
            for start in range(0, len(texts), batch_size):
                end = min(len(texts), start + batch_size)
                reqs = self._encode_batch(c, texts, pairs, start, end, max_len)
                self._embed_batch(c, reqs, start, spec, pooling, result)
        if normalize:
            norms = np.linalg.norm(result, axis=1, keepdims=True)
            result /= np.where(norms > 0, norms, 1)
        return result[0] if single else result

    def _encode_batch(self, c, texts, pairs, start, end, max_len):
        """texts[start:end] tokenised together: a Request per text, pointing into c's encodings."""
        n = end - start
        encs = c.encodings(n)
        t = (ctypes.c_char_p * n)(*[_text_bytes("text %d" % (start + k), texts[start + k]) for k in range(n)])
        p = None
        if pairs:
            p = (ctypes.c_char_p * n)(*[None if pairs[start + k] is None else
                                        _text_bytes("text %d pair" % (start + k), pairs[start + k]) for k in range(n)])
        opt = _native.BatchOptions()
        self._lib.bertc_batch_options_init(ctypes.byref(opt))
        opt.max_len = max_len
        err = ctypes.create_string_buffer(_ERR_CAP)
        st = self._lib.bertc_encode_batch(self._plan(), (ctypes.c_void_p * n)(*encs), t, p, n, ctypes.byref(opt),
                                          err, _ERR_CAP)
        if st:  # "text K: ..." counts from this batch's first text
            msg = err.value.decode("utf-8", "replace")
            if msg.startswith("text ") and msg[5:].split(":")[0].isdigit():
                k = int(msg[5:].split(":")[0])
                msg = "text %d%s" % (start + k, msg[5 + len(str(k)):])
            _fail(st, msg)
        return [_native.Request(self._lib.bertc_encoding_ids(e), self._lib.bertc_encoding_type_ids(e), None,
                                int(self._lib.bertc_encoding_len(e))) for e in encs]

    def _embed_batch(self, c, reqs, start, spec, pooling, result):
        """Runs the requests (packed batches that fit, or one by one) and writes their embeddings."""
        max_n = self._lib.bertc_plan_max_batch(self._plan())
        max_tokens = self._lib.bertc_plan_max_batch_tokens(self._plan())
        k = 0
        while k < len(reqs):
            n, tokens = 1, reqs[k].len
            while max_n and k + n < len(reqs) and n < max_n and tokens + reqs[k + n].len <= max_tokens:
                tokens += reqs[k + n].len
                n += 1
            packed = max_n > 0 and tokens <= max_tokens
            if packed:
                st = self._lib.bertc_infer_batch(c.ptr, (_native.Request * n)(*reqs[k:k + n]), n)
                if st:
                    _fail(st, "texts %d..%d (one packed batch; its request i is text %d + i): %s"
                          % (start + k, start + k + n - 1, start + k, c.error()))
            else:
                self._infer(c, reqs[k], "text %d" % (start + k))
            for i in range(n):
                self._embedding(c, spec, pooling, reqs[k + i].len, i if packed else None, result[start + k + i])
            k += n

    def _embedding(self, c, spec, pooling, length, index, dst):
        """The embedding of request `index` of the last batch (None: the last single request) into dst."""
        if not spec.per_token:
            self._read(c, spec, dst, index)
            return
        rows = np.empty((length, spec.cols), np.float32)
        self._read(c, spec, rows, index)
        dst[:] = rows[0] if pooling == "cls" else rows.mean(axis=0)

    # ---------------------------------------------------------------- ids
    def _infer(self, c, req, what):
        st = self._lib.bertc_infer(c.ptr, ctypes.byref(req))
        if st:
            _fail(st, "%s: %s" % (what, c.error()))

    def _read(self, c, spec, dst, index=None):
        """Output spec of the last request (index None) or of request `index` of the last packed batch."""
        p = dst.ctypes.data_as(_native.P_FLOAT)
        st = self._lib.bertc_output_read(c.ptr, spec.index, p, dst.size) if index is None else \
            self._lib.bertc_batch_output_read(c.ptr, spec.index, index, p, dst.size)
        if st:
            _fail(st, "%s: %s" % (spec.name, c.error()))

    def run(self, input_ids, attention_mask=None, token_type_ids=None, outputs=None):
        """Runs token ids: a dict output name -> float32 array.

        input_ids       [length] or [rows, length] integers (each row one request)
        attention_mask  same shape, 0/1 (default: all ones)
        token_type_ids  same shape (default: the model's default, 0)
        outputs         names to return (default: every output of the plan)

        Per-token outputs come back as [length, cols] ([rows, length, cols]), the others as [cols] ([rows, cols]).
        """
        ids = _as_int32("input_ids", input_ids)
        if ids.ndim not in (1, 2):
            raise InvalidArgumentError("input_ids must be [length] or [rows, length], not shape %s" % (ids.shape,),
                                       "invalid argument")
        mask = None if attention_mask is None else _as_int32("attention_mask", attention_mask, ids.shape)
        types = None if token_type_ids is None else _as_int32("token_type_ids", token_type_ids, ids.shape)
        names = list(self.outputs) if outputs is None else [outputs] if isinstance(outputs, str) else list(outputs)
        for n in names:
            if n not in self.outputs:
                raise InvalidArgumentError("no output %r (the plan has: %s)" % (n, ", ".join(self.outputs)),
                                           "invalid argument")
        rows = ids.reshape(-1, ids.shape[-1])
        length = rows.shape[1]
        result = {n: np.empty((rows.shape[0], length, self.outputs[n].cols) if self.outputs[n].per_token
                              else (rows.shape[0], self.outputs[n].cols), np.float32) for n in names}
        with self._use() as c:
            for r in range(rows.shape[0]):
                def row(a):
                    return None if a is None else a.reshape(-1, length)[r].ctypes.data_as(_native.P_INT32)
                req = _native.Request(row(ids), row(types), row(mask), length)
                self._infer(c, req, "row %d" % r if ids.ndim == 2 else "input_ids")
                for n in names:
                    self._read(c, self.outputs[n], result[n][r])
        if ids.ndim == 1:
            result = {n: a[0] for n, a in result.items()}
        return result


def _as_list(texts, pairs):
    single = isinstance(texts, str)
    texts = [texts] if single else list(texts)
    if pairs is not None:
        pairs = [pairs] if isinstance(pairs, str) else list(pairs)
        if len(pairs) != len(texts):
            raise InvalidArgumentError("%d texts but %d pairs" % (len(texts), len(pairs)), "invalid argument")
    return single, texts, pairs


def _as_int32(what, values, shape=None):
    a = np.asarray(values)
    if a.dtype.kind not in "iub":
        raise InvalidArgumentError("%s must hold integers, not %s" % (what, a.dtype), "invalid argument")
    if shape is not None and a.shape != shape:
        raise InvalidArgumentError("%s has shape %s; input_ids has %s" % (what, a.shape, shape), "invalid argument")
    if a.size and (a.min() < -2 ** 31 or a.max() > 2 ** 31 - 1):
        raise BadRequestError("%s holds a value that does not fit in 32 bits" % what, "bad request")
    return np.ascontiguousarray(a, dtype=np.int32)


def _cli(exe, args):
    p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        msg = p.stderr.decode("utf-8", "replace").strip() or "bertc %s exited with status %d" % (args[0], p.returncode)
        raise CompileError(msg, p.returncode)


def compile(model, out, archs=None, precision=None, buckets=None, jobs=None, bertc=None):
    """Compiles a Hugging Face directory or a model YAML into the plan `out` with the bertc command.

    archs      e.g. ["sm_80", "sm_90", "emu"] (default: the command's, sm_75..sm_90)
    precision  "fp16" (default), "bf16" or "fp32"
    buckets    sequence-length buckets, e.g. [32, 128, 512]
    jobs       architectures compiled at once
    bertc      the command (default: $BERTC, the one in this package, or bertc on PATH)
    Returns `out`.  Raises CompileError with the command's message.
    """
    exe = bertc or _native.cli_path()
    if not exe:
        raise CompileError("no bertc command: set BERTC or pass bertc=", 1)
    model, out = os.fspath(model), os.fspath(out)
    with tempfile.TemporaryDirectory(prefix="bertc-") as tmp:
        source = model
        if os.path.isdir(model):
            source = os.path.join(tmp, "model.yaml")
            _cli(exe, ["import", model, "-o", source])
        args = ["compile", source, "-o", out]
        if archs:
            args += ["--arch", archs if isinstance(archs, str) else ",".join(archs)]
        if precision:
            args += ["--precision", precision]
        if buckets:
            args += ["--buckets", ",".join(str(int(b)) for b in buckets)]
        if jobs:
            args += ["-j", str(int(jobs))]
        _cli(exe, args)
    return out
