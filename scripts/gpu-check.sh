#!/usr/bin/env bash
# One call on a GPU machine: build, run the GPU tests (UTILGATE_GPU_TESTS=1), measure the
# achievable peaks (`utilgate probe`), run the reference workload for a Llama-3-8B shape
# (decode batch 1 and 8 at context 4096 with CUDA graphs, batch 1 eager, prefill 2048) and the
# Python example harness, export the reference workload's baselines into baselines/<gpu-sku>.json,
# then print one short table. Sized for 5 minutes on one H100 or H200.
#
#   scripts/gpu-check.sh                 # builds with cargo (release)
#   UTILGATE_BIN=path/to/utilgate scripts/gpu-check.sh   # a binary built elsewhere
#   GPU_CHECK_SKIP_TESTS=1 ...           # skip the cargo GPU tests
#
# Every step has its own timeout; a failed step is reported in the table and the script goes
# on. Work files go to $GPU_CHECK_DIR (default: a fresh temporary directory; $OUT/gpu-check when
# $OUT is set, so that a remote runner brings them back).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
WORK=${GPU_CHECK_DIR:-${OUT:+$OUT/gpu-check}}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"

step() { # name timeout_s command...
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  echo "== $name" >&2
  timeout --kill-after=10 "$limit" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err"
  local rc=$?
  printf '%s\t%s\t%ss\n' "$name" "$rc" "$((SECONDS - start))" >> "$WORK/steps.tsv"
  if [ "$rc" != 0 ]; then tail -n 20 "$WORK/$name.err" >&2; fi
  return 0
}

# cuBLAS and NVRTC: CUDA 12 libraries from a toolkit or from pip wheels (nvidia-cublas-cu12,
# nvidia-cuda-nvrtc-cu12, which PyTorch installs).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-12*/lib64; do
  [ -d "$d" ] && LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
PIP_LIBS=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
dirs = []
for base in site.getsitepackages() + [site.getusersitepackages()]:
    dirs += glob.glob(os.path.join(base, "nvidia", "*", "lib"))
print(":".join(sorted(set(dirs))))
PY
)
[ -n "$PIP_LIBS" ] && LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PIP_LIBS"
export LD_LIBRARY_PATH
: > "$WORK/steps.tsv"
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,clocks.max.sm --format=csv,noheader > "$WORK/nvidia-smi.txt" 2>&1

BIN=${UTILGATE_BIN:-}
if [ -z "$BIN" ]; then
  step build 240 cargo build --release --locked
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/utilgate"
fi

if command -v cargo >/dev/null && [ -z "${GPU_CHECK_SKIP_TESTS:-}" ]; then
  step gpu-tests 240 env UTILGATE_GPU_TESTS=1 cargo test --release --locked --lib -- gpu:: measure::cuda:: measure::canary:: --include-ignored --test-threads=1
fi

step probe 120 "$BIN" probe --db "$WORK/gpu-check.db" --format json --iters 20

cat > "$WORK/utilgate.toml" <<TOML
[store]
path = "gpu-check.db"

[gate]
baseline_branch = "main"
confirm_repeats = 0

[[suite]]
name = "ref-graphs"
workload = "reference"
graphs = true
models = ["llama-3.1-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1, 8]
contexts = [4096]
warmup_steps = 10
steps = 50
repeats = 2
timeout_s = 120

[[suite]]
name = "ref-eager"
workload = "reference"
graphs = false
models = ["llama-3.1-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1]
contexts = [4096]
warmup_steps = 10
steps = 50
repeats = 2
timeout_s = 120

[[suite]]
name = "ref-prefill"
workload = "reference"
graphs = false
models = ["llama-3.1-8b"]
precisions = ["bf16"]
phases = ["prefill"]
batches = [1]
contexts = [2048]
warmup_steps = 3
steps = 20
repeats = 2
timeout_s = 120

[[suite]]
name = "hf-graphs"
command = "python3 '$ROOT/harness/python/examples/hf_decode.py' --graphs"
models = ["llama-3.1-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1]
contexts = [4096]
warmup_steps = 5
steps = 30
repeats = 1
timeout_s = 150
TOML

step reference 200 "$BIN" run --config "$WORK/utilgate.toml" --suite ref-graphs --suite ref-eager --suite ref-prefill --branch gpu-check --no-promote --format json
# The reference workload's baselines, for review like code: accepted in the check's own store
# and exported into the repository's baselines/<gpu-sku>.json (baselines/README.md), with a
# copy in $WORK. Commit it only from a quiet machine.
ref_run=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"]["id"])' "$WORK/reference.out" 2>/dev/null)
if [ -n "$ref_run" ]; then
  step accept 30 "$BIN" baseline accept ref- --run "$ref_run" --config "$WORK/utilgate.toml" \
    --reason "scripts/gpu-check.sh reference workload"
  step export 30 "$BIN" baseline export --config "$WORK/utilgate.toml" --out "$ROOT/baselines/"
  mkdir -p "$WORK/baselines"
  cp "$ROOT"/baselines/*.json "$WORK/baselines/" 2>/dev/null
else
  printf 'export\tskipped (no reference run)\t0s\n' >> "$WORK/steps.tsv"
fi
if python3 -c "import torch, transformers" 2>/dev/null; then
  step python-hf 170 "$BIN" run --config "$WORK/utilgate.toml" --suite hf-graphs --branch gpu-check --no-promote --format json
else
  printf 'python-hf\tskipped (no torch/transformers)\t0s\n' >> "$WORK/steps.tsv"
fi

python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(work, name + ".out")) as f:
            return json.load(f)
    except Exception:
        return None
try:
    print("GPU:", open(os.path.join(work, "nvidia-smi.txt")).read().strip())
except OSError:
    pass
print("%-34s %10s %9s %9s %8s" % ("step / case", "median", "MBU", "util", "verdict"))
probe = load("probe")
if probe:
    for f in probe["figures"]:
        unit, scale = ("GB/s", 1e9) if f["kind"].startswith("copy") else ("TFLOP/s", 1e12)
        share = "%.0f%%" % (100 * f["share"]) if f.get("share") else "-"
        print("%-34s %10s %9s %9s %8s" % ("probe " + f["kind"], "%.0f %s" % (f["value"] / scale, unit), share, "", ""))
for name in ("reference", "python-hf"):
    report = load(name)
    for c in (report or {}).get("cases", []):
        med = "%.3f ms" % c["median_ms"] if c.get("median_ms") else "-"
        mbu = "%.1f%%" % (100 * c["mbu"]) if c.get("mbu") is not None else "-"
        util = "%.1f%%" % (100 * c["utilisation"]) if c.get("utilisation") is not None else "-"
        print("%-34s %10s %9s %9s %8s" % (c["case"][:34], med, mbu, util, c["verdict"]))
        # Energy per token (#33 item 4): the line, or why a repeat has none.
        if c.get("energy_line"):
            print("   ", c["energy_line"][:240])
        if c.get("error"):
            print("   error:", c["error"][:200])
print()
for line in open(os.path.join(work, "steps.tsv")):
    name, rc, secs = line.rstrip("\n").split("\t")
    print("step %-12s rc=%-4s %s" % (name, rc, secs))
PY
