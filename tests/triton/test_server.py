"""test_server -- the bertc backend inside the real Triton Inference Server.

Run by tests/cli/triton.sh (part of `make test` when $BERTC_PYTHON has
tritonclient, nvidia-pytriton, numpy and pytest; .ci/run installs the
pinned versions).  PyPI's nvidia-pytriton ships a tritonserver binary and
libtritonserver.so that start on a machine without a GPU; the backend is
loaded from the model's version folder, exactly as `bertc export-triton`
lays it out, with BERTC_EMU_DEVICE unset so the emulated device copied
beside the backend is the one used.

The server listens on 127.0.0.1, on ports the kernel just handed out as
free; every wait is bounded (the server not coming up is a failure with
its log, not a hang); the test stops the process it started, by its pid,
and the server is also told to stop if this process dies first
(PR_SET_PDEATHSIG).

Truth is `bertc run` on the same plan and the same (emulated) device: a
deterministic device, so the server's answers must equal it bit for bit --
over HTTP and gRPC, for text and ids, batched and not, from 8 clients at
once.  Malformed requests must get errors naming the problem while the
server stays ready and keeps answering correctly.
"""
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

BUILD = os.environ.get("BERTC_BUILD_DIR", "build")
BERTC = os.environ.get("BERTC", os.path.join(BUILD, "bertc"))
PLAN = os.path.join(BUILD, "plans", "all-MiniLM-L6-v2-fp32.plan")
START_TIMEOUT = 180      # seconds for the server to load both models
REQUEST_TIMEOUT = 120    # seconds per request (the emulated device is slow)
TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", "Zürich is in Switzerland",
         "what is the capital of France?"]


def tritonserver_path():
    given = os.environ.get("BERTC_TRITONSERVER")
    if given:
        return given
    spec = importlib.util.find_spec("pytriton")
    assert spec and spec.submodule_search_locations, "nvidia-pytriton is not installed"
    return os.path.join(list(spec.submodule_search_locations)[0], "tritonserver", "bin", "tritonserver")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():   # runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)   # PR_SET_PDEATHSIG


def url_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


class Server:
    def __init__(self, repo, logdir):
        self.http, self.grpc = free_port(), free_port()
        self.log_path = os.path.join(logdir, "tritonserver.log")
        env = dict(os.environ)
        env.pop("BERTC_EMU_DEVICE", None)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [tritonserver_path(), "--model-repository", repo, "--http-address", "127.0.0.1", "--http-port",
             str(self.http), "--grpc-address", "127.0.0.1", "--grpc-port", str(self.grpc), "--allow-metrics",
             "false", "--exit-timeout-secs", "20"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, preexec_fn=die_with_parent)

    def log_tail(self, n=3000):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-n:]

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("tritonserver exited with status %d before it was ready:\n%s"
                                     % (self.proc.returncode, self.log_tail()))
            if url_ok("http://127.0.0.1:%d/v2/health/ready" % self.http):
                return
            time.sleep(0.25)
        raise AssertionError("tritonserver was not ready after %d s:\n%s" % (START_TIMEOUT, self.log_tail()))

    def ready(self):
        return url_ok("http://127.0.0.1:%d/v2/health/ready" % self.http)

    def stop(self):
        """SIGTERM to the process this test started; its exit status (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
                return None
        self.log.close()
        return self.proc.returncode


def export(repo, *args):
    p = subprocess.run([BERTC, "export-triton", PLAN, repo] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    assert p.returncode == 0, p.stderr.decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = str(tmp_path_factory.mktemp("repo"))
    export(repo, "--name", "minilm", "--device", "emu", "--max-batch", "8", "--instances", "2")
    export(repo, "--name", "minilm_i32", "--device", "emu", "--max-batch", "0", "--ids-type", "int32")
    s = Server(repo, str(tmp_path_factory.mktemp("log")))
    try:
        s.wait_ready()
    except AssertionError:
        s.stop()
        raise
    yield s
    s.stop()


_refs = {}


def reference(text=None, pair=None, ids=None, types=None, mask=None):
    """bertc run's outputs: {"last_hidden_state": [len, 384], "pooler_output" or "sentence_embedding": [384]}."""
    key = (text, pair, None if ids is None else tuple(ids), None if types is None else tuple(types),
           None if mask is None else tuple(mask))
    if key in _refs:
        return _refs[key]
    d = os.environ.get("TMPDIR", "/tmp")
    h, e = os.path.join(d, "bertc-ref-%d-h.npy" % os.getpid()), os.path.join(d, "bertc-ref-%d-e.npy" % os.getpid())
    args = [BERTC, "run", PLAN, "--device", "emu", "--output", h]
    if text is not None:
        args += ["--text", text, "--embedding-output", e] + (["--text-pair", pair] if pair is not None else [])
        second = "sentence_embedding"
    else:
        args += ["--ids", " ".join(map(str, ids)), "--pooled-output", e]
        args += ["--types", " ".join(map(str, types))] if types is not None else []
        args += ["--mask", " ".join(map(str, mask))] if mask is not None else []
        second = "pooler_output"
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    _refs[key] = {"last_hidden_state": np.load(h), second: np.load(e)}
    os.unlink(h)
    os.unlink(e)
    return _refs[key]


def text_input(mod, name, texts):
    a = np.array([[t] for t in texts], dtype=object)
    i = mod.InferInput(name, list(a.shape), "BYTES")
    i.set_data_from_numpy(a)
    return i


def int_input(mod, name, values, dtype=np.int64):
    a = np.asarray(values, dtype=dtype)
    i = mod.InferInput(name, list(a.shape), "INT64" if dtype == np.int64 else "INT32")
    i.set_data_from_numpy(a)
    return i


_clients = []


def http_client(s):
    c = httpclient.InferenceServerClient("127.0.0.1:%d" % s.http, connection_timeout=REQUEST_TIMEOUT,
                                         network_timeout=REQUEST_TIMEOUT)
    _clients.append(c)
    return c


def grpc_client(s):
    c = grpcclient.InferenceServerClient("127.0.0.1:%d" % s.grpc)
    _clients.append(c)
    return c


def close_clients():
    """Open keep-alive connections would hold the server's shutdown until its exit timeout."""
    while _clients:
        _clients.pop().close()


def infer(client, model, inputs, outputs=None):
    mod = httpclient if isinstance(client, httpclient.InferenceServerClient) else grpcclient
    req_out = [mod.InferRequestedOutput(o) for o in outputs] if outputs else None
    if mod is grpcclient:
        return client.infer(model, inputs, outputs=req_out, client_timeout=REQUEST_TIMEOUT)
    return client.infer(model, inputs, outputs=req_out)


def check_text_rows(result, texts, pairs=None):
    emb, hidden = result.as_numpy("sentence_embedding"), result.as_numpy("last_hidden_state")
    assert emb.shape == (len(texts), 384)
    for r, t in enumerate(texts):
        ref = reference(text=t, pair=pairs[r] if pairs else None)
        n = ref["last_hidden_state"].shape[0]
        assert np.array_equal(emb[r], ref["sentence_embedding"]), "row %d: sentence_embedding differs" % r
        assert np.array_equal(hidden[r, :n], ref["last_hidden_state"]), "row %d: last_hidden_state differs" % r
        assert not hidden[r, n:].any(), "row %d: padding is not zero" % r


def test_models_ready(server):
    for model in ("minilm", "minilm_i32"):
        assert url_ok("http://127.0.0.1:%d/v2/models/%s/ready" % (server.http, model)), model
    cfg = http_client(server).get_model_config("minilm")
    assert cfg["max_batch_size"] == 8 and cfg["backend"] == "bertc"
    assert [o["name"] for o in cfg["output"]] == ["last_hidden_state", "pooler_output", "sentence_embedding"]
    assert cfg["instance_group"][0]["count"] == 2 and cfg["instance_group"][0]["kind"] == "KIND_CPU"
    log = server.log_tail(100000)
    assert "bertc model minilm instance" in log and "the emulated device" in log


def test_text_over_http(server):
    texts = TEXTS[:2]
    r = infer(http_client(server), "minilm", [text_input(httpclient, "TEXT", texts)])
    check_text_rows(r, texts)
    assert r.get_response()["parameters"]["truncated"] is False


def test_text_pair_over_grpc(server):
    texts, pairs = TEXTS[2:4], ["It is a city.", "Paris"]
    r = infer(grpc_client(server), "minilm", [text_input(grpcclient, "TEXT", texts),
                                               text_input(grpcclient, "TEXT_PAIR", pairs)])
    check_text_rows(r, texts, pairs)


def test_ids_over_both(server):
    rng = np.random.default_rng(int(os.environ.get("BERTC_TEST_SEED", "1")))
    ids = [101] + rng.integers(1000, 30000, size=17).tolist() + [102]
    types = [0] * 10 + [1] * 9
    mask = [1] * 16 + [0] * 3
    ref = reference(ids=ids, types=types, mask=mask)
    for client, mod in ((http_client(server), httpclient), (grpc_client(server), grpcclient)):
        r = infer(client, "minilm", [int_input(mod, "INPUT_IDS", [ids]), int_input(mod, "TOKEN_TYPE_IDS", [types]),
                                     int_input(mod, "ATTENTION_MASK", [mask])],
                  outputs=["last_hidden_state", "pooler_output"])
        assert np.array_equal(r.as_numpy("last_hidden_state")[0], ref["last_hidden_state"])
        assert np.array_equal(r.as_numpy("pooler_output")[0], ref["pooler_output"])
        assert r.as_numpy("sentence_embedding") is None   # not asked for, not sent
    # the unbatched INT32 model: shapes without the batch dimension
    plain = reference(ids=ids)
    r = infer(http_client(server), "minilm_i32", [int_input(httpclient, "INPUT_IDS", ids, np.int32)])
    assert r.as_numpy("last_hidden_state").shape == (len(ids), 384)
    assert np.array_equal(r.as_numpy("last_hidden_state"), plain["last_hidden_state"])
    assert np.array_equal(r.as_numpy("pooler_output"), plain["pooler_output"])


def test_eight_concurrent_clients(server):
    for t in TEXTS:
        reference(text=t)
    failures, done = [], []

    def client(k):
        try:
            use_grpc = k % 2 == 1
            c, mod = (grpc_client(server), grpcclient) if use_grpc else (http_client(server), httpclient)
            for j in range(3):
                t = TEXTS[(k + j) % len(TEXTS)]
                r = infer(c, "minilm", [text_input(mod, "TEXT", [t])], outputs=["sentence_embedding"])
                if not np.array_equal(r.as_numpy("sentence_embedding")[0], reference(text=t)["sentence_embedding"]):
                    failures.append("client %d request %d: wrong embedding" % (k, j))
            done.append(k)
        except Exception as e:  # collected and reported below
            failures.append("client %d: %r" % (k, e))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=REQUEST_TIMEOUT * 3)
    assert not failures, failures
    assert sorted(done) == list(range(8)), "clients still running: %s" % sorted(set(range(8)) - set(done))


BAD = [
    ("no input", lambda m: [], "missing input: send TEXT"),
    ("text and ids", lambda m: [text_input(m, "TEXT", ["a"]), int_input(m, "INPUT_IDS", [[101, 102]])],
     "TEXT and INPUT_IDS are alternatives"),
    ("wrong type", lambda m: [int_input(m, "INPUT_IDS", [[101, 102]], np.int32)], "INT32"),
    ("too long", lambda m: [int_input(m, "INPUT_IDS", [[101] * 513])],
     "513 tokens per row, more than this model's longest request (512)"),
    ("empty", lambda m: [int_input(m, "INPUT_IDS", np.zeros((1, 0), np.int64))], "empty"),
    ("id beyond the vocabulary", lambda m: [int_input(m, "INPUT_IDS", [[101, 40000, 102]])],
     "input_ids[1] = 40000 is outside the vocabulary"),
    ("mask value", lambda m: [int_input(m, "INPUT_IDS", [[101, 5, 102]]), int_input(m, "ATTENTION_MASK", [[1, 2, 1]])],
     "attention_mask[1]"),
    ("mask shape", lambda m: [int_input(m, "INPUT_IDS", [[101, 5, 102]]), int_input(m, "ATTENTION_MASK", [[1, 1]])],
     "ATTENTION_MASK"),
    ("invalid UTF-8", lambda m: [text_input(m, "TEXT", [b"ok \xff\xfe"])], "TEXT row 0"),
    ("too many rows", lambda m: [int_input(m, "INPUT_IDS", [[101, 102]] * 9)], "batch"),
]


@pytest.mark.parametrize("what,make,want", BAD, ids=[b[0].replace(" ", "_") for b in BAD])
def test_bad_request(server, what, make, want):
    for client, mod in ((http_client(server), httpclient), (grpc_client(server), grpcclient)):
        with pytest.raises(InferenceServerException) as e:
            infer(client, "minilm", make(mod))
        assert want in str(e.value), "%s: %s" % (what, e.value)
    assert server.ready(), "the server is not ready after a bad request (%s)" % what


def test_serves_after_bad_requests(server):
    t = TEXTS[0]
    r = infer(http_client(server), "minilm", [text_input(httpclient, "TEXT", [t])])
    check_text_rows(r, [t])
    stats = http_client(server).get_inference_statistics("minilm")["model_stats"][0]["inference_stats"]
    assert int(stats["success"]["count"]) >= 10 and int(stats["fail"]["count"]) >= 8, stats


def test_stops_cleanly(server):
    close_clients()
    status = server.stop()
    assert status == 0, "tritonserver exited with %s:\n%s" % (status, server.log_tail())
    log = server.log_tail(100000)
    assert "successfully unloaded 'minilm'" in log, log[-2000:]
