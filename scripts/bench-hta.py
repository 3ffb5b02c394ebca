#!/usr/bin/env python3
"""Times HolisticTraceAnalysis (HTA) on a trace written by `cargo bench --bench trace` (the
comparison in docs/traces.md): load, temporal breakdown, kernel-type breakdown (with memory
kernels) and idle-time breakdown, each timed, and the process's peak resident memory.

Usage (docs/traces.md has the whole recipe):
    UTILGATE_BENCH_TRACE=/tmp/hta1m/bench.pt.trace.json cargo bench --bench trace -- 1000000 --hta
    /usr/bin/time -v /tmp/venv-hta/bin/python scripts/bench-hta.py /tmp/hta1m
The directory must hold that one trace. Prints on stdout."""
import resource
import sys
import time

import pandas as pd
from hta.trace_analysis import TraceAnalysis

pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 20)

t0 = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
t1 = time.perf_counter()
temporal = analyzer.get_temporal_breakdown(visualize=False)
t2 = time.perf_counter()
kernel_type, _kernels = analyzer.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
t3 = time.perf_counter()
idle, _stats = analyzer.get_idle_time_breakdown(visualize=False)
t4 = time.perf_counter()
print(temporal.to_string())
print(kernel_type.to_string())
print(idle.to_string())
print(
    f"HTA load {t1 - t0:.2f} s, temporal breakdown {t2 - t1:.2f} s, kernel-type breakdown "
    f"{t3 - t2:.2f} s, idle-time breakdown {t4 - t3:.2f} s, total {t4 - t0:.2f} s"
)
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
