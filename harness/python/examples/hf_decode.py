"""Example utilgate harness: decode (or prefill) steps of a Hugging Face transformers model with
random weights built from its config (no weight download), timed by utilgate_harness.

    [[suite]]
    name = "hf-decode"
    command = "python3 harness/python/examples/hf_decode.py --model {{ model }}"
    env = { PYTHONPATH = "harness/python" }

Modes: eager (default), --graphs (the decode step captured into a CUDA graph and replayed),
--compile (torch.compile, mode "reduce-overhead", which also uses CUDA graphs). Runs on the CPU
as well (eager only), with wall-clock timing.

Decode keeps the KV length at the case's context on every step: a static cache of context + 1
slots is prefilled once with `context` random tokens, and each step writes its token at
position `context`, overwriting the previous step's, so every step attends to exactly
context + 1 keys — what utilgate's floor assumes. transformers 5 ignores `cache_position` when it
writes a static cache (each layer appends at its own running length), so every step first sets
that length back to `context`; on 4.x the position alone does it.

On the CPU, torch runs on one thread (`--threads`, default 1), so the step matches a floor
computed from one core's measured bandwidth (`[gpu] mem_bandwidth_gb_s = "measure"`) and repeats
do not depend on what else the machine runs.

Run with: torch 2.15.0 + transformers 5.24.0 (CPU, decode and prefill), and transformers 4.x
through its `cache_position` path.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import utilgate_harness as ug  # noqa: E402

# Config fields of a few models, so that no network access is needed. Any other model: pass
# --config path/to/config.json.
BUILT_IN = {
    "llama-3.1-8b": dict(model_type="llama", hidden_size=4096, intermediate_size=14336,
                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         vocab_size=128256, rope_theta=500000.0, max_position_embeddings=131072,
                         rms_norm_eps=1e-5, tie_word_embeddings=False),
    "qwen2-7b": dict(model_type="qwen2", hidden_size=3584, intermediate_size=18944,
                     num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                     vocab_size=152064, rope_theta=1000000.0, max_position_embeddings=32768,
                     rms_norm_eps=1e-6, tie_word_embeddings=False),
    "tiny-llama": dict(model_type="llama", hidden_size=256, intermediate_size=688,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       vocab_size=1024, max_position_embeddings=8192, rms_norm_eps=1e-5,
                       tie_word_embeddings=False),
}
BUILT_IN["llama-3-8b"] = BUILT_IN["llama-3.1-8b"]

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def rewind(cache, length, torch):
    """Sets a static cache's write position back to `length` (transformers >= 5 keeps it per
    layer in `cumulative_length` and ignores `cache_position`; 4.x has no such field)."""
    for layer in getattr(cache, "layers", ()):
        written = getattr(layer, "cumulative_length", None)
        if isinstance(written, torch.Tensor):
            written.fill_(length)
        elif isinstance(written, int):
            layer.cumulative_length = length


def build_model(args, case, torch, transformers):
    if args.config:
        with open(args.config, encoding="utf-8") as f:
            fields = json.load(f)
    elif case.model in BUILT_IN:
        fields = dict(BUILT_IN[case.model])
    else:
        raise SystemExit("model %r: not built in (%s); pass --config config.json"
                         % (case.model, ", ".join(sorted(BUILT_IN))))
    config = transformers.AutoConfig.for_model(**fields)
    dtype = getattr(torch, DTYPES.get(case.precision, "bfloat16"))
    # transformers 5 names it `dtype`; 4.x before 4.56 knows only `torch_dtype`.
    new_names = int(transformers.__version__.split(".")[0]) >= 5
    config.dtype = dtype
    with torch.device(args.device):
        model = transformers.AutoModelForCausalLM.from_config(
            config, **({"dtype": dtype} if new_names else {"torch_dtype": dtype}))
    return model.eval(), config, dtype


def cache_argument(model):
    """The keyword the model's forward takes its KV cache under: `cache` in current
    transformers 5, `past_key_values` before."""
    import inspect
    return "cache" if "cache" in inspect.signature(model.forward).parameters \
        else "past_key_values"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="name in the built-in table (default: UTILGATE_MODEL)")
    parser.add_argument("--config", help="a Hugging Face config.json to build from")
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda if present)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--graphs", action="store_true", help="replay a captured CUDA graph")
    group.add_argument("--compile", action="store_true", help="torch.compile, reduce-overhead")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads on the CPU (default 1: one core, as the floor)")
    args = parser.parse_args()

    case = ug.Case.from_env()
    if args.model:
        case.model = args.model
    import torch
    import transformers
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if (args.graphs or args.compile) and args.device != "cuda":
        raise SystemExit("--graphs and --compile need a CUDA device")
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(1)
    torch.manual_seed(1234 + case.repeat)
    model, config, dtype = build_model(args, case, torch, transformers)
    b, ctx = case.batch, case.context
    vocab = config.vocab_size

    with torch.inference_mode():
        if case.phase == "prefill":
            ids = torch.randint(0, vocab, (b, ctx), device=args.device)

            def forward():
                return model(input_ids=ids, use_cache=False, logits_to_keep=1)
        else:
            try:  # transformers < 4.56 takes the batch, device and dtype up front
                cache = transformers.StaticCache(config=config, max_batch_size=b,
                                                 max_cache_len=ctx + 1, device=args.device,
                                                 dtype=dtype)
            except TypeError:
                cache = transformers.StaticCache(config=config, max_cache_len=ctx + 1)
            kv = {cache_argument(model): cache}
            prompt = torch.randint(0, vocab, (b, ctx), device=args.device)
            model(input_ids=prompt, use_cache=True, **kv,
                  cache_position=torch.arange(ctx, device=args.device), logits_to_keep=1)
            token = torch.randint(0, vocab, (b, 1), device=args.device)
            position = torch.tensor([ctx], device=args.device)

            def forward():
                rewind(cache, ctx, torch)
                return model(input_ids=token, use_cache=True, cache_position=position, **kv)

            forward()
            held = int(cache.get_seq_length())
            if held != ctx + 1:
                raise SystemExit("the static cache holds %d positions after a step, not %d: this "
                                 "transformers version (%s) writes it differently"
                                 % (held, ctx + 1, transformers.__version__))

        step = forward
        if args.compile:
            step = torch.compile(forward, mode="reduce-overhead", fullgraph=False)
        elif args.graphs:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    forward()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                forward()
            step = graph.replay

        mode = "compile" if args.compile else "graphs" if args.graphs else "eager"
        ug.run(lambda i: step(), case, device=args.device,
               extra_env={"mode": mode, "example": "hf_decode"})


if __name__ == "__main__":
    main()
