"""Serves a GGUF model with llama.cpp's OpenAI-compatible server through xllamacpp.

Started by evals/local-model.sh; runs until it gets SIGTERM or SIGINT. Sampling defaults to
temperature 0 (greedy), so identical requests give identical answers.
"""

import argparse
import signal
import threading

import xllamacpp


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=32768)
    ap.add_argument("--alias", default="local")
    # A chat template to use instead of the GGUF's own (evals/qwen2.5-coder-chat-template.jinja).
    ap.add_argument("--chat-template")
    args = ap.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = args.alias
    params.hostname = "127.0.0.1"
    params.port = args.port
    params.n_ctx = args.ctx
    # One slot: the whole window and one prompt cache for the one client (rein runs requests
    # one at a time; a subagent's request waits for its parent's).
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    # Jinja chat templates, so tool calls are rendered and parsed: the GGUF's own, or the
    # corrected one given (Qwen2.5's renders earlier calls' arguments as a JSON string, which
    # the model then imitates; check with POST /apply-template).
    params.use_jinja = True
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            params.chat_template = f.read()
    params.sampling.temp = 0.0
    params.sampling.top_k = 1

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"serving {args.model} on {server.listening_address}", flush=True)
    stop.wait()


if __name__ == "__main__":
    main()
