#!/usr/bin/env python3
"""Times HolisticTraceAnalysis on a trace written by `cargo bench --bench trace` (the comparison
in docs/traces.md). Usage: UTILGATE_BENCH_TRACE=/tmp/t/bench.pt.trace.json cargo bench --bench trace;
python3 scripts/bench-hta.py /tmp/t  (a directory holding that one trace; run with `nice`)."""
import resource
import sys
import time

from hta.trace_analysis import TraceAnalysis

start = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
loaded = time.perf_counter()
temporal = analyzer.get_temporal_breakdown(visualize=False)
done = time.perf_counter()
print(temporal.to_string())
print(f"HTA load {loaded - start:.2f} s, temporal breakdown {done - loaded:.2f} s, total {done - start:.2f} s")
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
