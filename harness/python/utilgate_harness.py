"""Helper for utilgate harnesses written in Python (harness protocol v1).

Dependency-free: the standard library only. PyTorch is used when the calling harness has
already imported it (CUDA-event timing, its version in the report); a pure-Python or CPU
harness never imports it.

    import utilgate_harness as ug

    case = ug.Case.from_env()            # UTILGATE_MODEL, UTILGATE_BATCH, ... as typed fields
    state = build(case.model, case.batch, case.context)
    ug.run(lambda i: decode_step(state), case)

`run` calls the step `warmup_steps + steps` times, times each call (CUDA events on a GPU, the
monotonic clock on the CPU), writes the warm-up steps marked `"warmup": true` and the timed ones
plain, and first writes an `{"env": {...}}` line with the versions the step depends on. It never
writes to stdout: utilgate reads only `$UTILGATE_OUT`.

When utilgate asks for a trace (suite `trace = true` or `utilgate run --trace`), it sets
`$UTILGATE_TRACE_DIR` for one extra repeat after the timed ones; `run` then profiles a few more
steps with torch.profiler (CPU and, with a GPU, CUDA activities; `record_shapes`; a
wait/warmup/active schedule; each step inside `record_function("decode_step")` or
`"prefill_step"`), writes a Chrome trace there and reports it with a `{"trace": path}` line. The
timed steps are never profiled (the observer effect).
"""

import json
import os
import platform
import sys
import time

__version__ = "1.0.0"
PROTOCOL = "1"

TRACE_DIR_VAR = "UTILGATE_TRACE_DIR"
# torch.profiler schedule of the traced steps: skipped, warm-up (profiled, discarded), recorded.
TRACE_WAIT, TRACE_WARMUP, TRACE_ACTIVE = 1, 1, 3

# Libraries whose versions are reported when the harness has imported them.
KEY_LIBRARIES = (
    "torch", "transformers", "flash_attn", "vllm", "sglang", "triton", "xformers",
    "accelerate", "bitsandbytes", "numpy",
)


class ProtocolError(RuntimeError):
    """The process was not started by `utilgate run` (or the environment is malformed)."""


class Case:
    """The case this process measures, read from the protocol's environment variables."""

    def __init__(self, model, precision, phase, batch, context, warmup_steps, steps, repeat, out):
        self.model = model
        self.precision = precision
        self.phase = phase
        self.batch = batch
        self.context = context
        self.warmup_steps = warmup_steps
        self.steps = steps
        self.repeat = repeat
        self.out = out

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        if env.get("UTILGATE_PROTOCOL") != PROTOCOL:
            raise ProtocolError(
                "UTILGATE_PROTOCOL is not %r: start this harness through `utilgate run` "
                "(a suite's command)" % PROTOCOL)

        def need(name):
            value = env.get(name)
            if value is None or value == "":
                raise ProtocolError("%s is not set" % name)
            return value

        def whole(name):
            text = need(name)
            try:
                return int(text)
            except ValueError:
                raise ProtocolError("%s=%r is not a whole number" % (name, text))

        return cls(
            model=need("UTILGATE_MODEL"),
            precision=need("UTILGATE_PRECISION"),
            phase=need("UTILGATE_PHASE"),
            batch=whole("UTILGATE_BATCH"),
            context=whole("UTILGATE_CONTEXT"),
            warmup_steps=whole("UTILGATE_WARMUP_STEPS"),
            steps=whole("UTILGATE_STEPS"),
            repeat=whole("UTILGATE_REPEAT"),
            out=need("UTILGATE_OUT"),
        )


class Reporter:
    """Appends protocol lines to `$UTILGATE_OUT`, flushed line by line."""

    def __init__(self, path):
        self._file = open(path, "a", buffering=1, encoding="utf-8")

    def _line(self, obj):
        self._file.write(json.dumps(obj, allow_nan=False) + "\n")

    def env(self, versions):
        self._line({"env": {str(k): str(v) for k, v in versions.items()}})

    def step(self, ms, warmup=False):
        ms = float(ms)
        if not (ms > 0.0) or ms == float("inf"):
            raise ValueError("a step time must be a positive finite number of ms, got %r" % ms)
        if warmup:
            self._line({"step_ms": ms, "warmup": True})
        else:
            self._line({"step_ms": ms})

    def trace(self, path):
        self._line({"trace": str(path)})

    def quality(self, metric, correct, total):
        """Report a quality metric scored beside the steps: `correct` answers of `total`
        (utilgate's accuracy guard judges it against the baseline's, whatever the speed)."""
        correct, total = int(correct), int(total)
        if total <= 0 or not (0 <= correct <= total):
            raise ValueError("%s: %d correct of %d is not a score" % (metric, correct, total))
        self._line({"quality": {str(metric): {"correct": correct, "total": total}}})

    def speculative(self, drafted, accepted):
        """Report a speculative case's drafted and accepted tokens over its counted rounds
        (utilgate judges the share accepted against the baseline's, whatever the speed)."""
        drafted, accepted = int(drafted), int(accepted)
        if drafted < 0 or not (0 <= accepted <= drafted):
            raise ValueError("%d accepted of %d drafted is not a count" % (accepted, drafted))
        self._line({"speculative": {"drafted": drafted, "accepted": accepted}})

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _driver_version():
    """The NVIDIA driver version from /proc (Linux), without NVML or nvidia-smi."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            for word in f.readline().split():
                if word[:1].isdigit() and "." in word:
                    return word
    except OSError:
        pass
    return None


def versions(extra=None):
    """Versions of what a step depends on: Python, the platform, the key libraries the harness
    has imported (never importing one itself), and for PyTorch its CUDA, cuDNN and the GPU."""
    out = {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "utilgate_harness": __version__,
    }
    for name in KEY_LIBRARIES:
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None) if module else None
        if version:
            out[name] = str(version)
    torch = sys.modules.get("torch")
    if torch is not None:
        cuda = getattr(getattr(torch, "version", None), "cuda", None)
        if cuda:
            out["torch_cuda"] = cuda
        try:
            if torch.backends.cudnn.is_available():
                out["cudnn"] = str(torch.backends.cudnn.version())
        except Exception:  # cudnn probing is best effort
            pass
        try:
            if torch.cuda.is_available():
                out["gpu"] = torch.cuda.get_device_name()
        except Exception:
            pass
    driver = _driver_version()
    if driver:
        out["nvidia_driver"] = driver
    out.update(extra or {})
    return out


class Timer:
    """Times one call: CUDA events when `device` is "cuda" (or "auto" with an imported PyTorch
    that sees a GPU), else the monotonic clock. Device time, synchronised before reading."""

    def __init__(self, device="auto"):
        torch = sys.modules.get("torch")
        if device == "cuda" and torch is None:
            import torch  # noqa: F811  (asked for CUDA explicitly: PyTorch must be there)
        use_cuda = device == "cuda" or (
            device == "auto" and torch is not None and torch.cuda.is_available())
        self.kind = "cuda-events" if use_cuda else "wall-clock"
        if use_cuda:
            self._torch = torch
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)

    def time_ms(self, fn, *args):
        if self.kind == "cuda-events":
            self._start.record()
            fn(*args)
            self._end.record()
            self._end.synchronize()
            return self._start.elapsed_time(self._end)
        t0 = time.perf_counter_ns()
        fn(*args)
        return (time.perf_counter_ns() - t0) / 1e6


def run(step, case=None, device="auto", extra_env=None, score=None, drafts=None):
    """Call `step(i)` for i in 0 .. warmup_steps + steps - 1, timing each, and report every
    time to `$UTILGATE_OUT`. Returns the timed (non-warm-up) step times in ms.

    `score`, when given, is called once after the timed steps (never timed) with the case and
    returns `{metric: (correct, total)}`, e.g. exact matches on a fixed prompt set run through
    the same code path; each is reported as a quality metric.

    `drafts`, for a speculative suite (`UTILGATE_DRAFT_K` set), returns the engine's cumulative
    `(drafted, accepted)` token counters (vLLM's `num_draft_tokens`, `num_accepted_tokens`); it
    is read before the first timed step and after the last, and the difference is reported, so
    warm-up rounds never count."""
    case = case or Case.from_env()
    timer = Timer(device)
    timed = []
    with Reporter(case.out) as out:
        env = versions(extra_env)
        env["timer"] = timer.kind
        out.env(env)
        before = None
        for i in range(case.warmup_steps + case.steps):
            if drafts is not None and i == case.warmup_steps:
                before = drafts()
            ms = timer.time_ms(step, i)
            warm = i < case.warmup_steps
            out.step(ms, warmup=warm)
            if not warm:
                timed.append(ms)
        if drafts is not None:
            after = drafts()
            before = before if before is not None else after
            out.speculative(after[0] - before[0], after[1] - before[1])
        if score is not None:
            for metric, (correct, total) in sorted(score(case).items()):
                out.quality(metric, correct, total)
        trace_dir = os.environ.get(TRACE_DIR_VAR)
        if trace_dir:
            path = profile(step, case, trace_dir, start=case.warmup_steps + case.steps)
            if path is not None:
                out.trace(path)
    return timed


def profile(step, case, trace_dir, start=0):
    """Profile `TRACE_WAIT + TRACE_WARMUP + TRACE_ACTIVE` calls of `step` with torch.profiler and
    export a Chrome trace into `trace_dir`. Returns its path, or None (with a note on stderr)
    when PyTorch is not installed."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, record_function, schedule
    except ImportError:
        sys.stderr.write("utilgate_harness: no PyTorch, so no trace (%s is set)\n" % TRACE_DIR_VAR)
        return None
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    os.makedirs(trace_dir, exist_ok=True)
    path = os.path.join(trace_dir, "utilgate.%d.pt.trace.json" % case.repeat)
    label = "%s_step" % case.phase
    total = TRACE_WAIT + TRACE_WARMUP + TRACE_ACTIVE
    with torch.profiler.profile(
        activities=activities,
        schedule=schedule(wait=TRACE_WAIT, warmup=TRACE_WARMUP, active=TRACE_ACTIVE, repeat=1),
        record_shapes=True,
        on_trace_ready=lambda prof: prof.export_chrome_trace(path),
    ) as prof:
        for i in range(total):
            with record_function(label):
                step(start + i)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            prof.step()
    return path
