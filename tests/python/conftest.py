"""Fixtures of the Python binding's tests (CTest's Python.Pytest runs them against an install of
the build; by hand: PYTHONPATH=build/python INFERLAB_BINARY=build/inferlab /usr/bin/python3 -m
pytest tests/python)."""

import json
import os
import pathlib
import subprocess

import pytest

import inferlab


@pytest.fixture(scope="session")
def source_dir():
    """The source tree (validation/data, data/)."""
    return pathlib.Path(os.environ.get("INFERLAB_SOURCE_DIR",
                                       pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def cli():
    """Runs the `inferlab` executable: cli(*args) -> CompletedProcess (text)."""
    binary = os.environ.get("INFERLAB_BINARY")
    if not binary:
        pytest.skip("INFERLAB_BINARY (the inferlab executable) is not set")

    def run(*args):
        return subprocess.run([binary, *map(str, args)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=600)
    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    """The JSON object `inferlab <args> --format json` prints (exit code 0 expected)."""
    def run(*args):
        result = cli(*args, "--format", "json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)
    return run


@pytest.fixture(scope="session")
def cli_error(cli):
    """The message `inferlab <args>` prints after "inferlab: error: " (exit code 2 expected)."""
    def run(*args):
        result = cli(*args)
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stdout == ""
        assert result.stderr.startswith("inferlab: error: ")
        return result.stderr[len("inferlab: error: "):].strip()
    return run


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A two-layer Llama config.json (tests/test_support.cpp's tiny_llama_config) with the Llama 3
    tokenizer's vocabulary: random weights on the CPU in a blink."""
    path = tmp_path_factory.mktemp("tiny") / "tiny.json"
    path.write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 128256,
        "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}))
    return str(path)


@pytest.fixture(scope="session")
def have_tokenizer(tiny_model):
    """Whether the Llama 3 tokenizer is fetched (scripts/fetch-tokenizer.sh)."""
    try:
        inferlab.Engine(tiny_model, device="cpu", kv_tokens=64).generate("a", max_tokens=1)
        return True
    except ValueError as e:
        if "tokenizer" in str(e):
            return False
        raise
