#!/usr/bin/env python3
"""Streaming clients for validation/server_sigterm_gpu.sh (standard library only).

    python3 server_sigterm_clients.py PORT MODEL CLIENTS TOKENS OUT_JSON

Each client sends streamed /v1/completions (a token-id prompt, TOKENS tokens, EOS ignored)
back to back until the server stops taking them. Each request ends as "whole" (HTTP 200, a
finish_reason, then [DONE], no error event), "cut" (HTTP 200 but not whole: what a drain must
never do), "refused" (no connection, or the connection closed before a status) or "status N"
(503 while shutting down). Writes every request's fate to OUT_JSON and prints the counts.
"""
import http.client
import json
import random
import sys
import threading

port, model, clients, tokens, out = (int(sys.argv[1]), sys.argv[2], int(sys.argv[3]),
                                     int(sys.argv[4]), sys.argv[5])
results = []
lock = threading.Lock()


def one(client, n):
    rng = random.Random(client * 100003 + n)
    body = json.dumps({"model": model, "prompt": [rng.randrange(128000) for _ in range(256)],
                       "max_tokens": tokens, "min_tokens": tokens, "ignore_eos": True,
                       "temperature": 0, "stream": True})
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
    except Exception as e:  # refused, reset before a status: not accepted
        return "refused", type(e).__name__
    if response.status != 200:
        return f"status {response.status}", response.read()[:200].decode(errors="replace")
    done = finished = error = False
    try:
        for line in response:
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            data = line[6:]
            if data == b"[DONE]":
                done = True
                continue
            chunk = json.loads(data)
            if "error" in chunk:
                error = True
            elif chunk.get("choices") and chunk["choices"][0].get("finish_reason"):
                finished = True
    except Exception as e:
        return "cut", f"{type(e).__name__}: {e}"
    if done and finished and not error:
        return "whole", ""
    return "cut", f"done={done} finished={finished} error={error}"


def client(index):
    n = 0
    while True:
        kind, detail = one(index, n)
        with lock:
            results.append({"client": index, "request": n, "fate": kind, "detail": detail})
        if kind != "whole":
            return
        n += 1


threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
counts = {}
for r in results:
    counts[r["fate"]] = counts.get(r["fate"], 0) + 1
with open(out, "w") as f:
    json.dump({"counts": counts, "requests": results}, f, indent=1)
print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
