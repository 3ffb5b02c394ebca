#!/usr/bin/env python3
"""A stand-in for `vllm bench serve --save-result`: writes a result file in vLLM's current schema
(the keys and units of vllm/benchmarks/serve.py) from the distributions it is given, without a
server. utilgate's end-to-end tests run it as a suite's load generator and import its files.

Prompts (their input and output lengths) come from --seed, as a real dataset sample would; the
"server" latencies come from a separate noise stream seeded by --noise-seed (default: the
UTILGATE_REPEAT of the repeat plus 1000 x --noise-offset), so repeats differ like fresh runs.

TTFT per request: lognormal around --ttft-ms (sigma --sigma); requests above the 95th percentile
are multiplied by --ttft-tail-factor (so p99 moves while the median stays). ITL per token:
lognormal around --itl-ms. --failed K makes the last K requests fail (an error text, no tokens).
"""

import argparse
import json
import math
import os
import random
import sys


def pct(xs, p):
    """numpy.percentile's default (linear interpolation), as vLLM uses."""
    if not xs:
        return 0.0
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def std(xs):
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)) if xs else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="stub-model")
    ap.add_argument("--request-rate", default="inf")
    ap.add_argument("--burstiness", type=float, default=1.0)
    ap.add_argument("--max-concurrency", type=int, default=None)
    ap.add_argument("--num-prompts", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--random-input-len", type=int, default=512)
    ap.add_argument("--random-output-len", type=int, default=64)
    ap.add_argument("--ttft-ms", type=float, default=100.0)
    ap.add_argument("--ttft-tail-factor", type=float, default=1.0)
    ap.add_argument("--itl-ms", type=float, default=20.0)
    ap.add_argument("--sigma", type=float, default=0.1)
    ap.add_argument("--failed", type=int, default=0)
    ap.add_argument("--noise-seed", type=int, default=None)
    ap.add_argument("--noise-offset", type=int, default=0)
    ap.add_argument("--save-detailed", action="store_true")
    ap.add_argument("--metadata", nargs="*", default=[])
    ap.add_argument("--result-filename", default=os.environ.get("UTILGATE_RESULT_FILE"))
    # Options of `vllm bench serve` that say how to reach the server and what to send; the
    # stand-in has no server, so they are accepted and ignored.
    ap.add_argument("--backend")
    ap.add_argument("--base-url")
    ap.add_argument("--endpoint")
    ap.add_argument("--dataset-name")
    ap.add_argument("--save-result", action="store_true")
    a = ap.parse_args()
    if not a.result_filename:
        sys.exit("no --result-filename and no UTILGATE_RESULT_FILE")

    prompts = random.Random(a.seed)
    noise_seed = a.noise_seed
    if noise_seed is None:
        noise_seed = int(os.environ.get("UTILGATE_REPEAT", "0")) + 1000 * a.noise_offset
    noise = random.Random(noise_seed)

    n = a.num_prompts
    input_lens = [max(1, int(a.random_input_len * prompts.uniform(0.5, 1.5))) for _ in range(n)]
    output_lens = [max(2, int(a.random_output_len * prompts.uniform(0.5, 1.5))) for _ in range(n)]
    ttfts = [a.ttft_ms / 1e3 * math.exp(noise.gauss(0.0, a.sigma)) for _ in range(n)]
    cut = pct(ttfts, 95)
    ttfts = [t * a.ttft_tail_factor if t > cut else t for t in ttfts]
    itls = [
        [a.itl_ms / 1e3 * math.exp(noise.gauss(0.0, a.sigma)) for _ in range(o - 1)]
        for o in output_lens
    ]
    ok = [i < n - a.failed for i in range(n)]
    errors = ["" if good else "Bad Gateway" for good in ok]
    for i in range(n):
        if not ok[i]:
            ttfts[i], itls[i], output_lens[i] = 0.0, [], 0

    good = [i for i in range(n) if ok[i]]
    g_ttft = [ttfts[i] * 1e3 for i in good]
    g_itl = [x * 1e3 for i in good for x in itls[i]]
    g_tpot = [sum(itls[i]) / (output_lens[i] - 1) * 1e3 for i in good if output_lens[i] > 1]
    g_e2el = [(ttfts[i] + sum(itls[i])) * 1e3 for i in good]
    rate = float(a.request_rate)
    duration = (n / rate if rate != float("inf") else 0.0) + max(g_e2el or [0.0]) / 1e3
    out_tokens = sum(output_lens[i] for i in good)
    in_tokens = sum(input_lens[i] for i in good)
    result = {
        "date": "20261201-000000",
        "endpoint_type": "openai",
        "backend": "openai",
        "label": None,
        "model_id": a.model,
        "tokenizer_id": a.model,
        "num_prompts": n,
        "request_rate": rate if rate != float("inf") else "inf",
        "burstiness": a.burstiness,
        "max_concurrency": a.max_concurrency,
        "duration": duration,
        "completed": len(good),
        "failed": n - len(good),
        "total_input_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "request_throughput": len(good) / duration,
        "request_goodput": None,
        "output_throughput": out_tokens / duration,
        "total_token_throughput": (in_tokens + out_tokens) / duration,
        "max_output_tokens_per_s": out_tokens / duration * 2.0,
        "max_concurrent_requests": min(n, a.max_concurrency or n),
    }
    for name, xs in (("ttft", g_ttft), ("tpot", g_tpot), ("itl", g_itl), ("e2el", g_e2el)):
        result[f"mean_{name}_ms"] = mean(xs)
        result[f"median_{name}_ms"] = pct(xs, 50)
        result[f"std_{name}_ms"] = std(xs)
        result[f"p99_{name}_ms"] = pct(xs, 99)
    if a.save_detailed:
        result.update(
            input_lens=input_lens,
            output_lens=output_lens,
            ttfts=ttfts,
            itls=itls,
            generated_texts=["x" * o for o in output_lens],
            errors=errors,
        )
    for kv in a.metadata:
        k, _, v = kv.partition("=")
        result[k] = v
    with open(a.result_filename, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
