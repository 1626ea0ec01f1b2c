"""test_bertc -- the Python package, installed from the built wheel, on the emulated device.

Run by tests/cli/python.sh (part of `make test` when $BERTC_PYTHON has
numpy and pytest; .ci/run installs them): it installs the wheel with pip
into a fresh folder and runs these tests against that copy, with
BERTC_EMU_DEVICE unset so the package's own emulated device is the one
used.  Plans come from `make plans` (build/plans/).

Truth: sentence-transformers' own embeddings of 21 sentences
(tests/golden/all-MiniLM-L6-v2-sentences.bsen, read here by an
independent reader, bsen.py), with the tolerances of
tests/runtime/test_sentences.c (fp32: cosine >= 0.99999, every component
within 1e-4); the file's own SHA-256 for the plan's digest; and the
package against itself where the runtime is deterministic (threads, run()
against encode(), a plan compiled through bertc.compile against the one
`make plans` compiled): equal bits.
"""
import hashlib
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import bertc
import bsen

BUILD = os.environ.get("BERTC_BUILD_DIR", "build")
MINILM = os.path.join(BUILD, "plans", "all-MiniLM-L6-v2-fp32.plan")
TINY = os.path.join(BUILD, "plans", "tiny-bert-fp32.plan")
MINILM_PACKED = os.path.join(BUILD, "plans", "all-MiniLM-L6-v2-batch-fp32.plan")  # token buckets 64, 256; 16 requests
GOLDEN = os.path.join("tests", "golden", "all-MiniLM-L6-v2-sentences.bsen")
SEED = int(os.environ.get("BERTC_TEST_SEED", "1"))


@pytest.fixture(scope="module")
def minilm():
    with bertc.Plan(MINILM, device="emu") as plan:
        yield plan


@pytest.fixture(scope="module")
def tiny():
    with bertc.Plan(TINY, device="emu") as plan:
        yield plan


def test_installed_from_the_wheel(minilm):
    site = os.environ.get("BERTC_TEST_SITE")
    assert site, "BERTC_TEST_SITE is not set (run through tests/cli/python.sh)"
    assert os.path.realpath(bertc.__file__).startswith(os.path.realpath(site) + os.sep), bertc.__file__
    assert "BERTC_EMU_DEVICE" not in os.environ and "BERTC_LIBRARY" not in os.environ
    assert minilm.image == ("emu", "emu")   # the package's own emulated device, found beside its libbertc
    out = subprocess.run([sys.executable, "-m", "bertc", "--version"], stdout=subprocess.PIPE, check=True)
    assert out.stdout.decode().strip() == "bertc " + bertc.__version__


def test_plan_properties(minilm):
    assert minilm.model_name == "all-MiniLM-L6-v2"
    assert minilm.hidden == 384 and minilm.vocab_size == 30522
    assert minilm.buckets == [32, 128, 256, 512] and minilm.max_len == 512
    assert minilm.has_tokenizer
    assert {n: (o.per_token, o.cols) for n, o in minilm.outputs.items()} == {
        "last_hidden_state": (True, 384), "pooler_output": (False, 384), "sentence_embedding": (False, 384)}
    with open(MINILM, "rb") as f:
        assert minilm.sha256 == hashlib.sha256(f.read()).hexdigest()


def test_sentence_transformers_goldens(minilm):
    header, cases = bsen.load(GOLDEN)
    assert len(cases) == 21 and header.get("model") == "all-MiniLM-L6-v2"
    texts = [c.text for c in cases]
    encodings = minilm.tokenize(texts)
    for i, (case, enc) in enumerate(zip(cases, encodings)):
        assert enc.ids.tolist() == case.ids.tolist(), "sentence %d: ids differ from sentence-transformers'" % i
    assert any(e.truncated for e in encodings)   # the 602-id paragraph is cut to max_seq_length
    emb = minilm.encode(texts, batch_size=8)
    assert emb.shape == (21, 384) and emb.dtype == np.float32
    for i, case in enumerate(cases):
        cos = float(np.dot(emb[i], case.embedding) / (np.linalg.norm(emb[i]) * np.linalg.norm(case.embedding)))
        assert cos >= 0.99999, "sentence %d: cosine %.7f" % (i, cos)
        assert np.max(np.abs(emb[i] - case.embedding)) <= 1e-4, "sentence %d" % i
    # one str -> one vector; batch size does not change a bit
    assert np.array_equal(minilm.encode(texts[3]), emb[3])
    assert np.array_equal(minilm.encode(texts[:5], batch_size=1), emb[:5])


def test_run_and_encode_agree(minilm):
    enc = minilm.tokenize("How many people live in Berlin?", pairs="Around 3.7 million.")
    assert enc.type_ids.tolist().count(1) > 0
    out = minilm.run(input_ids=enc.ids, token_type_ids=enc.type_ids)
    assert out["last_hidden_state"].shape == (len(enc), 384) and out["pooler_output"].shape == (384,)
    emb = minilm.encode("How many people live in Berlin?", pairs="Around 3.7 million.")
    assert np.array_equal(out["sentence_embedding"], emb)
    # the other poolings, from the outputs they name
    assert np.array_equal(minilm.encode("How many people live in Berlin?", pairs="Around 3.7 million.",
                                        pooling="cls"), out["last_hidden_state"][0])
    assert np.array_equal(minilm.encode("How many people live in Berlin?", pairs="Around 3.7 million.",
                                        pooling="pooler"), out["pooler_output"])
    mean = minilm.encode("How many people live in Berlin?", pairs="Around 3.7 million.", pooling="mean",
                         normalize=True)
    want = out["last_hidden_state"].mean(axis=0)
    assert np.allclose(mean, want / np.linalg.norm(want), rtol=0, atol=1e-6)


def test_run_rows_and_masks(tiny):
    rng = np.random.default_rng(SEED)
    ids = rng.integers(0, tiny.vocab_size, size=(3, 11), dtype=np.int64)
    mask = np.ones((3, 11), np.int64)
    mask[1, 7:] = 0
    types = rng.integers(0, 2, size=(3, 11))
    out = tiny.run(ids, attention_mask=mask, token_type_ids=types, outputs=["pooler_output", "last_hidden_state"])
    assert set(out) == {"pooler_output", "last_hidden_state"}
    assert out["last_hidden_state"].shape == (3, 11, 96) and out["pooler_output"].shape == (3, 96)
    for r in range(3):   # each row is its own request
        one = tiny.run(ids[r].astype(np.int32), attention_mask=mask[r], token_type_ids=types[r])
        assert np.array_equal(one["last_hidden_state"], out["last_hidden_state"][r])
        assert np.array_equal(one["pooler_output"], out["pooler_output"][r])
    # the masked tail does not reach the unmasked rows (as in Hugging Face): same as the row cut short
    short = tiny.run(ids[1, :7], token_type_ids=types[1, :7])
    assert np.allclose(short["last_hidden_state"], out["last_hidden_state"][1, :7], rtol=0, atol=1e-5)


def test_threads_have_their_own_contexts(tiny):
    texts = ["thread %d says hello number %d" % (t, k) for t in range(4) for k in range(3)]
    want = tiny.encode(texts)
    got, errors = {}, []

    def work(t):
        try:
            got[t] = tiny.encode(texts[3 * t:3 * t + 3])
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors and len(got) == 4, errors
    for t in range(4):
        assert np.array_equal(got[t], want[3 * t:3 * t + 3]), "thread %d" % t


def test_tokenize(tiny):
    e = tiny.tokenize("hello world")
    assert e.tokens[0] == "[CLS]" and e.tokens[-1] == "[SEP]" and not e.truncated
    assert e.ids.dtype == np.int32 and len(e.ids) == len(e.tokens) == len(e.type_ids)
    cut = tiny.tokenize("hello world " * 40, max_len=10)
    assert len(cut) == 10 and cut.truncated and cut.tokens[-1] == "[SEP]"
    both = tiny.tokenize(["a", "b c"], pairs=["d", "e"])
    assert [x.type_ids.tolist().count(1) for x in both] == [2, 2]


def test_errors(minilm, tmp_path):
    with pytest.raises(bertc.BadRequestError, match=r"input_ids\[1\] = 30522 is outside the vocabulary"):
        minilm.run(input_ids=[101, 30522, 102])
    with pytest.raises(bertc.BadRequestError) as e:
        minilm.run(input_ids=[101] * 513)
    assert e.value.status == "bad request" and "513" in str(e.value)
    with pytest.raises(bertc.BadRequestError, match="does not fit in 32 bits"):
        minilm.run(input_ids=[101, 2 ** 40, 102])
    with pytest.raises(bertc.BadRequestError, match="NUL"):
        minilm.encode("a\0b")
    with pytest.raises(bertc.BadRequestError, match="UTF-8"):
        minilm.encode("lone \ud800 surrogate")
    with pytest.raises(ValueError):   # every bad-input error is a ValueError too
        minilm.run(input_ids=[[101, 102]], attention_mask=[[1, 1, 1]])
    for bad in (dict(pooling="max"), dict(batch_size=0)):
        with pytest.raises(bertc.InvalidArgumentError):
            minilm.encode("x", **bad)
    with pytest.raises(bertc.InvalidArgumentError, match="no output 'logits'"):
        minilm.run(input_ids=[101, 102], outputs=["logits"])
    with pytest.raises(bertc.InvalidArgumentError, match="integers"):
        minilm.run(input_ids=[101.0, 102.0])
    with pytest.raises(TypeError):
        minilm.encode([b"bytes"])
    with pytest.raises(bertc.InvalidArgumentError, match="device"):
        bertc.Plan(MINILM, device="gpu")
    with pytest.raises(bertc.BadPlanError, match="missing.plan"):
        bertc.Plan(str(tmp_path / "missing.plan"), device="emu")
    junk = tmp_path / "junk.plan"
    junk.write_bytes(b"BERTCPLN" + bytes(200))
    with pytest.raises(bertc.BadPlanError, match="junk.plan"):
        bertc.Plan(str(junk), device="emu")
    with pytest.raises(bertc.BadPlanError, match="SHA-256"):
        bertc.Plan(MINILM, device="emu", expected_sha256="0" * 64)
    try:   # no GPU on CI machines: the runtime says why, as NoDeviceError
        bertc.Plan(TINY, device="cuda").run(input_ids=[1, 2])
    except bertc.NoDeviceError as e:
        assert "CUDA" in str(e) and e.status == "no device"
    # the plan still answers after all of that; a closed one refuses
    assert minilm.encode("still here").shape == (384,)
    p = bertc.Plan(TINY, device="emu")
    p.encode("x")
    p.close()
    with pytest.raises(bertc.InvalidArgumentError, match="closed"):
        p.encode("x")
    p.close()


def test_encode_packed_batches(minilm):
    """With token buckets, encode() sends packed batches (several texts per launch): every embedding is the same
    bits whatever batch_size (each text alone in a batch of 1 included), pooling from per-token rows too, and
    matches the plan without token buckets to float rounding (that plan may split its own GEMMs' K by the bucket,
    docs/runtime.md); an error names the text by its place in the whole list."""
    rng = np.random.default_rng(SEED)
    words = ["cat", "dog", "market", "the", "runs", "quickly", "over", "Zürich", "bank", "river", "a", "of"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 30)))) for _ in range(40)] + ["", "x"]
    with bertc.Plan(MINILM_PACKED, device="emu") as packed:
        want = packed.encode(texts, batch_size=1)
        for bs in (7, 64):
            assert packed.encode(texts, batch_size=bs).tobytes() == want.tobytes(), bs
        np.testing.assert_allclose(want, minilm.encode(texts), rtol=0, atol=1e-5)
        for pooling, n in (("mean", 9), ("cls", 5)):
            alone = packed.encode(texts[:n], pooling=pooling, batch_size=1)
            assert packed.encode(texts[:n], pooling=pooling).tobytes() == alone.tobytes(), pooling
            np.testing.assert_allclose(alone, minilm.encode(texts[:n], pooling=pooling), rtol=0, atol=1e-5)
        with pytest.raises(bertc.BadRequestError, match=r"text 3: .*UTF-8"):
            packed.encode(["a", "b", "c", "lone \ud800 surrogate", "e"], batch_size=2)
        np.testing.assert_allclose(packed.encode("still here"), minilm.encode("still here"), rtol=0, atol=1e-5)


def test_compile(tiny, tmp_path):
    out = bertc.compile(os.path.join(BUILD, "hf", "tiny-bert"), tmp_path / "tiny.plan", archs=["emu"],
                        precision="fp32", buckets=[8, 16, 64], jobs=1)
    assert out == str(tmp_path / "tiny.plan")
    ids = np.arange(100, 113)
    with bertc.Plan(out, device="emu") as mine:
        assert mine.buckets == [8, 16, 64]
        a, b = mine.run(ids), tiny.run(ids)
        for name in b:
            assert np.array_equal(a[name], b[name]), name
    with pytest.raises(bertc.CompileError) as e:
        bertc.compile(tmp_path / "no-such-model", tmp_path / "x.plan", archs=["emu"])
    assert e.value.exit_status == 2 and "no-such-model" in str(e.value)
    assert not os.path.exists(tmp_path / "x.plan")


def test_docs_example(tmp_path, capsys):
    """docs/python.md's complete example, as written, with its settings pointed at tiny-bert on the CPU."""
    doc = open(os.path.join("docs", "python.md"), encoding="utf-8").read()
    code = doc.split("## A complete example", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    settings = {"MODEL": repr(os.path.join(BUILD, "hf", "tiny-bert")), "PLAN": repr(str(tmp_path / "tiny.plan")),
                "ARCHS": '["emu"]', "DEVICE": '"emu"'}
    lines = code.splitlines()
    for key, value in settings.items():
        at = [i for i, line in enumerate(lines) if line.startswith(key + " = ")]
        assert len(at) == 1, "the example has no single %s setting" % key
        lines[at[0]] = "%s = %s" % (key, value)
    exec(compile("\n".join(lines), "docs/python.md", "exec"), {"__name__": "docs_example"})
    printed = capsys.readouterr().out
    assert "best match:" in printed and "refused: input_ids:" in printed and "last_hidden_state (1," in printed
