"""inferlab.predict, step, serve, validate and run: the CLI's JSON, in-process."""

import json

import pytest

import inferlab


def test_predict_equals_the_cli(cli_json):
    result = inferlab.predict(model="llama-3.2-1b", hardware="h100-sxm", batch=1, input=512,
                              output=128)
    assert result == cli_json("predict", "--model", "llama-3.2-1b", "--hardware", "h100-sxm",
                              "--batch", 1, "--input", 512, "--output", 128)
    assert result["ttft_ms"] > 0


def test_predict_options_are_the_flags(cli_json):
    result = inferlab.predict(model="llama-3-8b", hardware="h100-sxm", batch=8, input=1024,
                              output=64, weights="int4", kv="fp8", tp=2, cuda_graphs=False,
                              flash_attention="on")
    assert result == cli_json("predict", "--model", "llama-3-8b", "--hardware", "h100-sxm",
                              "--batch", 8, "--input", 1024, "--output", 64, "--weights", "int4",
                              "--kv", "fp8", "--tp", 2, "--cuda-graphs", "off",
                              "--flash-attention", "on")
    engine = inferlab.predict(model="llama-3.2-1b", hardware="h200", framework="inferlab",
                              gemv="off")
    assert engine == cli_json("predict", "--model", "llama-3.2-1b", "--hardware", "h200",
                              "--framework", "inferlab", "--gemv", "off")


def test_step_equals_the_cli(cli_json):
    assert inferlab.step(model="llama-3.2-1b", hardware="h100-sxm", phase="prefill",
                         tokens=256) == cli_json("step", "--model", "llama-3.2-1b", "--hardware",
                                                 "h100-sxm", "--phase", "prefill", "--tokens", 256)
    assert inferlab.step(model="llama-3-8b", hardware="h200", phase="decode", batch=16,
                         context=2048) == cli_json("step", "--model", "llama-3-8b", "--hardware",
                                                   "h200", "--phase", "decode", "--batch", 16,
                                                   "--context", 2048)


def test_serve_equals_the_cli(cli_json):
    workload = {"requests": 40, "rate": 8, "input_dist": "lognormal:512,0.5",
                "output_dist": "uniform:16,64", "shared_prefix": "tokens=128,groups=2",
                "seed": 3}
    result = inferlab.serve(model="llama-3.2-1b", hardware="h100-sxm", workload=workload,
                            prefix_caching=True, max_num_seqs=32)
    assert result == cli_json("serve", "--model", "llama-3.2-1b", "--hardware", "h100-sxm",
                              "--requests", 40, "--rate", 8, "--input-dist", "lognormal:512,0.5",
                              "--output-dist", "uniform:16,64", "--shared-prefix",
                              "tokens=128,groups=2", "--seed", 3, "--prefix-caching",
                              "--max-num-seqs", 32)
    assert result["executor"] == "sim"


def test_serve_takes_a_trace(cli_json, tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,512,32\n0.1,128,64\n0.5,900,8\n")
    assert inferlab.serve(model="llama-3.2-1b", trace=trace) == cli_json(
        "serve", "--model", "llama-3.2-1b", "--trace", trace)


def test_validate_equals_the_cli(cli_json, source_dir):
    data = source_dir / "validation/data/torch_reference_h100_2026-11-22.json"
    assert inferlab.validate(data=data, hardware="h100-sxm", cost="roofline",
                             split="holdout") == cli_json("validate", "--data", data,
                                                          "--hardware", "h100-sxm", "--cost",
                                                          "roofline", "--split", "holdout")
    profile = (source_dir /
               "validation/data/engine_profile_h100_llama-3-8b_ablation_gemv_graphs_2026-11-23.json")
    assert inferlab.validate(data=[profile], engine=True) == cli_json(
        "validate", "--engine", "--data", profile)


def test_validate_over_its_bounds_is_a_runtime_error_with_the_result(cli, source_dir):
    data = source_dir / "validation/data/torch_reference_h100_2026-11-22.json"
    with pytest.raises(RuntimeError) as raised:
        inferlab.validate(data=data, hardware="h100-sxm", max_mape={"gemm": 0.0001})
    cli_run = cli("validate", "--data", data, "--hardware", "h100-sxm", "--max-mape",
                  "gemm=0.0001", "--format", "json")
    assert cli_run.returncode == 1
    assert str(raised.value) == cli_run.stderr.strip()[len("inferlab: "):]
    assert str(raised.value).startswith("accuracy below bounds: ")
    assert raised.value.result == json.loads(cli_run.stdout)


def test_run_takes_any_json_command(cli_json):
    assert inferlab.run("sweep", model="llama-3.2-1b", batch=[1, 8], input=[128, 512],
                        output=32) == cli_json("sweep", "--model", "llama-3.2-1b", "--batch",
                                               "1,8", "--input", "128,512", "--output", 32)


def test_bad_input_is_a_value_error_with_the_cli_message(cli_error):
    with pytest.raises(ValueError) as raised:
        inferlab.predict(model="no-such-model")
    assert str(raised.value) == cli_error("predict", "--model", "no-such-model")
    assert "known: " in str(raised.value)

    with pytest.raises(ValueError) as raised:
        inferlab.predict(batch=-1)
    assert str(raised.value) == cli_error("predict", "--batch", -1)

    with pytest.raises(ValueError) as raised:
        inferlab.predict(hardware="h100-sxm", weights="int3")
    assert str(raised.value) == cli_error("predict", "--hardware", "h100-sxm", "--weights",
                                          "int3")

    with pytest.raises(ValueError) as raised:
        inferlab.step(phase="sideways")
    assert str(raised.value) == cli_error("step", "--phase", "sideways")


def test_unknown_keywords_and_commands_are_value_errors():
    with pytest.raises(ValueError, match=r"unknown keyword argument 'bacth' for predict; "
                                         r"known: .*\bbatch\b"):
        inferlab.predict(bacth=4)
    with pytest.raises(ValueError, match="unknown keyword argument 'format'"):
        inferlab.predict(format="table")
    with pytest.raises(ValueError, match=r"unknown workload key 'rqeuests'; known: .*requests"):
        inferlab.serve(workload={"rqeuests": 10})
    with pytest.raises(ValueError, match="'prefix_caching' is a switch of serve"):
        inferlab.serve(prefix_caching="yes")
    with pytest.raises(ValueError, match="unknown command 'no-such-command'; known: .*predict"):
        inferlab.run("no-such-command")
    with pytest.raises(ValueError, match="does not print JSON"):
        inferlab.run("logits")


def test_the_package_says_its_version():
    assert inferlab.__version__.count(".") == 2
