"""inferlab.Engine on the CPU with a tiny random model: the same logits and tokens as the CLI's
`logits` and `generate`."""

import json
import threading

import numpy
import pytest

import inferlab

PROMPT = [1, 2, 3, 250, 7, 128000, 42]


@pytest.fixture(scope="module")
def engine(tiny_model):
    return inferlab.Engine(tiny_model, device="cpu", seed=4)


def test_the_engine_is_opened_with_its_options(engine, tiny_model):
    assert engine.device == "cpu"
    assert engine.vocab_size == 128256
    assert engine.context == 128
    assert engine.kv_tokens == 4096  # the CPU's default
    assert inferlab.Engine(tiny_model, device="cpu", kv_tokens=100).kv_tokens >= 100
    assert "tiny.json" in repr(engine)


@pytest.mark.parametrize("prefill", [None, 3])
def test_logits_equal_the_cli(engine, tiny_model, cli, tmp_path, prefill):
    (tmp_path / "ids.json").write_text(json.dumps(PROMPT))
    args = ["logits", "--model", tiny_model, "--device", "cpu", "--seed", 4, "--tokens",
            tmp_path / "ids.json", "--out", tmp_path / "logits.npy"]
    if prefill is not None:
        args += ["--prefill", prefill]
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    expected = numpy.load(tmp_path / "logits.npy")
    logits = engine.logits(PROMPT, prefill=prefill)
    assert logits.dtype == numpy.float32
    assert logits.shape == (len(PROMPT), 128256)
    numpy.testing.assert_allclose(logits, expected, rtol=0, atol=1e-5)


def test_greedy_generation_is_deterministic_and_follows_the_logits(engine):
    first = engine.generate(PROMPT, max_tokens=8)
    assert engine.generate(numpy.array(PROMPT), max_tokens=8)["tokens"].tolist() == \
        first["tokens"].tolist()
    tokens = first["tokens"]
    assert tokens.dtype == numpy.int32
    assert 1 <= len(tokens) <= 8
    assert first["finish_reason"] in ("stop", "length")
    assert first["prompt_tokens"] == len(PROMPT)
    assert first["ttft_ms"] > 0 and first["tpot_ms"] >= 0
    # Each greedy token is the argmax of the logits after the tokens before it (the same prefill,
    # then decode steps, as generation runs them).
    logits = engine.logits(PROMPT + tokens.tolist(), prefill=len(PROMPT))
    assert numpy.argmax(logits[len(PROMPT) - 1:-1], axis=1).tolist() == tokens.tolist()


def test_text_generation_equals_the_cli(engine, tiny_model, cli_json, have_tokenizer):
    if not have_tokenizer:
        pytest.skip("Llama 3 tokenizer not fetched (scripts/fetch-tokenizer.sh)")
    for sampling in ({}, {"temperature": 0.9, "top_p": 0.95}):
        # The CLI's --seed draws the weights and the samples; the Engine's seed the weights.
        ours = inferlab.Engine(tiny_model, device="cpu", seed=11).generate(
            "Hello there", max_tokens=8, seed=11, **sampling)
        flags = [a for key, value in sampling.items() for a in ("--" + key.replace("_", "-"),
                                                                value)]
        theirs = cli_json("generate", "--model", tiny_model, "--device", "cpu", "--prompt",
                          "Hello there", "--max-tokens", 8, "--seed", 11, *flags)
        assert ours["tokens"].tolist() == theirs["tokens"]
        for key in ("text", "finish_reason", "prompt_tokens", "device"):
            assert ours[key] == theirs[key], key
        assert set(ours) == set(theirs)


def test_generation_from_several_threads_waits_its_turn(engine):
    expected = engine.generate(PROMPT, max_tokens=4)["tokens"].tolist()
    results = []

    def run():
        results.append(engine.generate(PROMPT, max_tokens=4)["tokens"].tolist())
    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 3


def test_bad_input_is_a_value_error(engine, tiny_model):
    with pytest.raises(ValueError, match=r"unknown keyword argument 'kv_token' for Engine; "
                                         r"known: .*kv_tokens"):
        inferlab.Engine(tiny_model, kv_token=10)
    with pytest.raises(ValueError, match="unknown --device 'tpu'; known: auto, cpu, cuda"):
        inferlab.Engine(tiny_model, device="tpu")
    with pytest.raises(ValueError, match="--weights"):
        inferlab.Engine(tiny_model, device="cpu", weights="int3")
    with pytest.raises(ValueError, match="--seed"):
        inferlab.Engine(tiny_model, device="cpu", seed="many")
    with pytest.raises(ValueError):
        inferlab.Engine("no-such-model", device="cpu")
    with pytest.raises(ValueError, match="the prompt has no tokens"):
        engine.generate([], max_tokens=4)
    with pytest.raises(ValueError, match="max_tokens must be in"):
        engine.generate(PROMPT, max_tokens=0)
    with pytest.raises(ValueError, match="top_p must be in"):
        engine.generate(PROMPT, top_p=0)
    with pytest.raises(ValueError, match="model's context of 128"):
        engine.generate(PROMPT, max_tokens=125)
    with pytest.raises(ValueError):
        engine.generate([128256])  # past the vocabulary
    with pytest.raises(ValueError, match="token id -1 is out of range"):
        engine.logits([-1])
    with pytest.raises(TypeError):
        engine.logits([1.5])
    with pytest.raises(ValueError, match="prefill 9 is more than the 7 tokens given"):
        engine.logits(PROMPT, prefill=9)
    small = inferlab.Engine(tiny_model, device="cpu", kv_tokens=16)
    with pytest.raises(ValueError, match="KV cache"):
        small.logits(list(range(1, 40)))
    with pytest.raises(ValueError, match="KV"):
        small.generate(PROMPT, max_tokens=20)
