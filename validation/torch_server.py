#!/usr/bin/env python3
"""A minimal PyTorch server: the baseline `inferlab server`'s throughput is set beside.

Hugging Face transformers (bf16, SDPA attention) behind the OpenAI completions API as far as
`inferlab loadgen` uses it: token-id prompts, max_tokens (always generated in full: no EOS),
greedy, streamed as server-sent events with a usage chunk and [DONE]; GET /v1/models. Requests
are batched statically, as a server written in an afternoon would: the worker takes every
request waiting 100 ms after the first (up to --max-batch), left-pads the prompts, runs `model.generate` on the batch
until all are done, and streams each step's tokens as the step picks them (a logits processor
sees every step). Requests that arrive meanwhile wait for the next batch. No paged KV cache, no
continuous batching, no CUDA graphs: that is the point of the comparison.

usage: torch_server.py CHECKPOINT [--port 8001] [--max-batch 256]
"""
import argparse
import json
import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch
from transformers import AutoModelForCausalLM, LogitsProcessor, LogitsProcessorList


class Request:
    def __init__(self, prompt, max_tokens):
        self.prompt, self.max_tokens = prompt, max_tokens
        self.tokens = queue.Queue()  # ints, then None at the end


class StreamSteps(LogitsProcessor):
    """Hands each step's greedy pick to its request as the step makes it."""

    def __init__(self, batch):
        self.batch, self.step = batch, 0

    def __call__(self, input_ids, scores):
        picks = scores.argmax(dim=-1).tolist()
        for request, token in zip(self.batch, picks):
            if self.step < request.max_tokens:
                request.tokens.put(token)
        self.step += 1
        return scores


def worker(model, waiting, max_batch):
    while True:
        batch = [waiting.get()]
        time.sleep(0.1)  # a window for the rest of a burst to arrive
        while len(batch) < max_batch:
            try:
                batch.append(waiting.get_nowait())
            except queue.Empty:
                break
        longest = max(len(r.prompt) for r in batch)
        ids = torch.zeros((len(batch), longest), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(batch):  # left padding: every prompt ends at the same column
            ids[i, longest - len(r.prompt):] = torch.tensor(r.prompt)
            mask[i, longest - len(r.prompt):] = 1
        steps = max(r.max_tokens for r in batch)
        with torch.inference_mode():
            model.generate(input_ids=ids.cuda(), attention_mask=mask.cuda(), max_new_tokens=steps,
                           min_new_tokens=steps, do_sample=False, eos_token_id=None,
                           pad_token_id=0, logits_processor=LogitsProcessorList([StreamSteps(batch)]))
        for r in batch:
            r.tokens.put(None)


def make_handler(model_name, waiting):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send_json(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/models":
                return self.send_json(200, {"object": "list", "data": [{"id": model_name}]})
            self.send_json(404, {"error": {"message": "no such route"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = body["prompt"]
            if self.path != "/v1/completions" or not isinstance(prompt, list):
                return self.send_json(400, {"error": {"message": "token-id prompts only"}})
            request = Request(prompt, int(body.get("max_tokens", 16)))
            waiting.put(request)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            count = 0
            while (token := request.tokens.get()) is not None:
                count += 1
                chunk = {"choices": [{"index": 0, "text": f"<{token}>", "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            end = {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
            usage = {"choices": [], "usage": {"prompt_tokens": len(prompt),
                                              "completion_tokens": count}}
            for event in (end, usage):
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 4096  # listen() backlog: the default 5 drops a burst of 256 clients


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--port", type=int, default=8001)
    ap.add_argument("--max-batch", type=int, default=256)
    args = ap.parse_args()
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint, dtype=torch.bfloat16,
                                                 attn_implementation="sdpa").cuda().eval()
    model.generation_config.eos_token_id = None
    waiting = queue.Queue()
    threading.Thread(target=worker, args=(model, waiting, args.max_batch), daemon=True).start()
    server = Server(("127.0.0.1", args.port), make_handler("torch", waiting))
    print(f"torch server on {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
