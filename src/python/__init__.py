"""inferlab from Python: how long an LLM takes on given hardware, and why.

The functions run the `inferlab` command of the same name in-process, through the same code
as the executable, and return what ``inferlab <command> --format json`` prints, as a dict:

    >>> import inferlab
    >>> r = inferlab.predict(model="llama-3.2-1b", hardware="h100-sxm", batch=1,
    ...                      input=512, output=128, weights="int4")
    >>> r["ttft_ms"], r["tpot_ms"]

Keyword arguments are the command's flags in snake_case (``--cuda-graphs on`` is
``cuda_graphs="on"``; ``--prefix-caching`` is ``prefix_caching=True``); an argument of None is
left out (the flag's default). Values go to the flag as text: True/False become on/off for a
flag that takes a value, a list or tuple becomes a comma-separated list (``batch=[1, 8]`` for
``sweep``), a dict becomes ``key=value,...`` (``max_mape={"gemm": 0.1}``); a flag that takes
several values (``validate``'s ``data``) takes a list of them.

Errors: bad input (an unknown model, a negative batch, an unknown keyword argument) raises
ValueError with the message the CLI prints after "inferlab: error: "; a run that fails raises
RuntimeError.

`Engine` opens inferlab's own engine (CUDA, or the fp32 CPU reference) once and generates
text or teacher-forced logits on it. See docs/python.md.
"""

import json as _json
import operator as _operator
import os as _os
import warnings as _warnings


def _installed_data_dir():
    """<prefix>/share/inferlab beside an installed package (<prefix>/lib/python3/dist-packages/
    inferlab), where `cmake --install` puts the shipped data; None elsewhere (a build tree, whose
    library knows the source tree's data/)."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    data = _os.path.normpath(_os.path.join(here, "..", "..", "..", "..", "share", "inferlab"))
    return data if _os.path.isdir(_os.path.join(data, "hardware")) else None


# The library looks for shipped data in $INFERLAB_DATA_DIR first, then beside the running
# executable (here: Python's) and then in the source tree it was built from.
if not _os.environ.get("INFERLAB_DATA_DIR") and _installed_data_dir():
    _os.environ["INFERLAB_DATA_DIR"] = _installed_data_dir()

from . import _inferlab  # noqa: E402  (after the data folder is known)

__version__ = _inferlab.__version__
__all__ = ["predict", "step", "serve", "validate", "run", "Engine"]


def _flag_value(value):
    """One keyword argument's value as the flag's text."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        return ",".join(f"{k}={_flag_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ",".join(_flag_value(v) for v in value)
    if isinstance(value, _os.PathLike):
        return _os.fspath(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _flags(known, options, what):
    """The command-line flags for keyword arguments `options`, given the flags `known` as the
    module lists them: (snake_case name, is a switch, takes several values)."""
    flags = {name: (switch, several) for name, switch, several in known}
    args = []
    for key, value in options.items():
        if value is None:
            continue
        if key not in flags:
            raise ValueError(f"unknown keyword argument '{key}' for {what}; known: "
                             + ", ".join(flags))
        switch, several = flags[key]
        flag = "--" + key.replace("_", "-")
        if switch:
            if not isinstance(value, bool):
                raise ValueError(f"'{key}' is a switch of {what}: give True or False")
            if value:
                args.append(flag)
        elif several and isinstance(value, (list, tuple)):
            for item in value:
                args += [flag, _flag_value(item)]
        else:
            args += [flag, _flag_value(value)]
    return args


def _message(err):
    """The CLI's error message without its "inferlab: error: " (or "inferlab: ") prefix."""
    text = err.strip()
    for prefix in ("inferlab: error: ", "inferlab: "):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


def run(command, **options):
    """Runs any `inferlab` command that prints JSON (``--format json``) and returns that object
    as a dict: ``inferlab.run("sweep", model="llama-3.2-1b", batch=[1, 8])``.

    Keyword arguments are the command's flags (see the module's documentation). Raises
    ValueError for bad input, with the CLI's message; RuntimeError when the run fails (with
    ``.result``, the command's output, where it printed one: ``validate`` over its bounds).
    """
    known = _inferlab.command_flags(command)
    if not any(name == "format" for name, _, _ in known):
        raise ValueError(f"`inferlab {command}` does not print JSON (it has no --format)")
    known = [flag for flag in known if flag[0] != "format"]
    args = [command] + _flags(known, options, command) + ["--format", "json"]
    code, out, err = _inferlab.run_command(args)
    out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    if code == 0:
        for line in err.splitlines():
            _warnings.warn(_message(line), stacklevel=3)
        return _json.loads(out)
    if code == 2:
        raise ValueError(_message(err))
    error = RuntimeError(_message(err))
    try:
        error.result = _json.loads(out)
    except ValueError:
        pass
    raise error


def predict(model=None, hardware=None, batch=None, input=None, output=None, **options):
    """Latency, throughput and memory of one batch of requests, with a per-operator breakdown
    of prefill and decode: ``inferlab predict --format json``.

    model: a shipped model's name or a config.json path; hardware: a GPU's name or a spec
    sheet; batch: sequences per batch; input, output: prompt and generated tokens per
    sequence (None: the CLI's defaults). Other flags as keyword arguments: weights="int4",
    kv="fp8", tp=2, framework="inferlab", cuda_graphs="on", cost="roofline", ...
    """
    return run("predict", model=model, hardware=hardware, batch=batch, input=input,
               output=output, **options)


def step(model=None, hardware=None, phase=None, batch=None, tokens=None, context=None,
         **options):
    """One prefill step (phase="prefill", tokens=N) or one decode step (phase="decode",
    context=L), per operator: ``inferlab step --format json``."""
    return run("step", model=model, hardware=hardware, phase=phase, batch=batch, tokens=tokens,
               context=context, **options)


def serve(model=None, hardware=None, workload=None, trace=None, **options):
    """The serving simulator over a request stream: ``inferlab serve --format json``.

    workload: a dict of the workload's flags, e.g. ``{"requests": 100, "rate": 5,
    "input_dist": "lognormal:512,0.5", "output_dist": "fixed:64", "shared_prefix": ...,
    "arrival": "poisson", "seed": 1}``; or trace: a request trace's path in its place. Other
    flags (the scheduler's, max_num_seqs=..., prefix_caching=True, slo=..., executor=...) as
    keyword arguments.
    """
    known = {name for name, _, _ in _inferlab.workload_flags()}
    workload = dict(workload or {})
    for key in workload:
        if key not in known:
            raise ValueError(f"unknown workload key '{key}'; known: " + ", ".join(sorted(known)))
        if options.get(key) is not None:
            raise ValueError(f"'{key}' is given both in workload and as a keyword argument")
    if trace is not None:
        workload["trace"] = trace
    return run("serve", model=model, hardware=hardware, **workload, **options)


def validate(data=None, hardware=None, **options):
    """Predicted against measured for every operator and step of a reference file:
    ``inferlab validate --format json``. data: the reference file (a list of engine profiles
    with engine=True); cost="calibrated", split="holdout", max_mape=... as keyword arguments.
    """
    return run("validate", data=data, hardware=hardware, **options)


class Engine:
    """inferlab's engine with one model, opened once (``engine::open_engine``): the same
    engine as ``inferlab generate`` and ``inferlab logits``.

    model: a checkpoint folder, a shipped model's name or a config.json (random weights drawn
    from ``seed``). Options: device="auto" (cuda where a GPU is present, else "cpu": the fp32
    reference), kv_tokens (the KV cache's size; default 4096 on the CPU, what the GPU's memory
    holds on a GPU), max_batch_tokens=4096 (tokens per forward pass; longer prompts prefill in
    chunks), seed=0, gpu_memory_utilization=0.9, cuda_graphs="on", tokenizer (a tokenizer.json;
    default the checkpoint's, else the fetched Llama 3 tokenizer), and the engine's switches as
    the CLI spells them: weights ("auto", "bf16", "fp8", "int8", "int4"), kv, activations,
    gemv, fusion, attention, group_size, tp. Bad options raise ValueError.

    The engine runs one call at a time (calls from several threads wait their turn); the GIL
    is released while it works.
    """

    def __init__(self, model, **options):
        flags = _flags(_inferlab.engine_flags(), options, "Engine")
        self._engine = _inferlab._Engine(_os.fspath(model), flags)
        self.model = _os.fspath(model)

    @property
    def device(self):
        """"cuda" or "cpu"."""
        return self._engine.device

    @property
    def vocab_size(self):
        """Rows of the model's embedding: the logits' second dimension."""
        return self._engine.vocab_size

    @property
    def context(self):
        """The model's context (max_position_embeddings)."""
        return self._engine.context

    @property
    def kv_tokens(self):
        """Tokens the KV cache holds: a generation's prompt plus new tokens must fit."""
        return self._engine.kv_tokens

    def generate(self, prompt, max_tokens=16, temperature=0.0, seed=0, top_p=1.0, top_k=0):
        """Generates from `prompt`: text (encoded with the model's tokenizer, BOS first, as
        ``inferlab generate --prompt`` does) or a sequence of token ids (run as given).

        Returns ``inferlab generate --format json``'s object as a dict: text (None for token
        ids when no tokenizer is found), tokens (the new tokens, a NumPy int32 array),
        finish_reason ("stop" at one of the tokenizer's stop tokens, else "length"),
        prompt_tokens, ttft_ms, tpot_ms, e2e_ms, decode_tokens_per_s, device. temperature 0 is
        greedy; seed draws the samples otherwise.
        """
        if not isinstance(prompt, str):
            prompt = [_operator.index(t) for t in prompt]
        text, tokens = self._engine.generate(prompt, max_tokens, temperature, seed, top_p, top_k)
        result = _json.loads(text)
        result["tokens"] = tokens
        return result

    def logits(self, tokens, prefill=None):
        """Teacher-forced logits of `tokens` (token ids) as ``inferlab logits`` computes them: a
        prefill of the first `prefill` tokens (None: all of them) giving every position's
        logits, then one decode step per remaining token. A NumPy float32 array [len(tokens),
        vocab_size]."""
        ids = [_operator.index(t) for t in tokens]
        return self._engine.logits(ids, 0 if prefill is None else _operator.index(prefill))

    def __repr__(self):
        return f"inferlab.Engine({self.model!r}, device={self.device!r})"
