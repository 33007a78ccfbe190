#!/usr/bin/env python3
"""Times HolisticTraceAnalysis (pip install HolisticTraceAnalysis) on a directory of per-rank
PyTorch profiler traces: the load, then the analyses stepscope's `gpu`, `idle`, `launches`,
`kernel-patterns` and `stragglers`-like per-rank figures answer. Prints one line per stage
(wall seconds) and the peak resident memory of this process and its workers, for the
comparison table in docs/analysis.md. A development-time oracle, not a dependency."""
import argparse
import resource
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("trace_dir")
    args = parser.parse_args()
    from hta.trace_analysis import TraceAnalysis

    def stage(name, fn):
        start = time.perf_counter()
        try:
            fn()
            status = "ok"
        except Exception as error:  # an analysis HTA cannot run on the input is reported, not fatal
            status = f"failed: {type(error).__name__}: {error}"[:160]
        print(f"{name:28s} {time.perf_counter() - start:8.2f} s  {status}", flush=True)

    holder = {}
    stage("load (TraceAnalysis)", lambda: holder.update(analyzer=TraceAnalysis(trace_dir=args.trace_dir)))
    analyzer = holder.get("analyzer")
    if analyzer is None:
        return 1
    ranks = sorted(analyzer.t.traces.keys())  # HTA's per-rank analyses default to rank 0 only
    print(f"ranks: {ranks}")
    stage("temporal breakdown", lambda: analyzer.get_temporal_breakdown(visualize=False))
    stage("idle time breakdown", lambda: analyzer.get_idle_time_breakdown(ranks=ranks, visualize=False))
    stage("kernel launch stats", lambda: analyzer.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False))
    stage("comm/comp overlap", lambda: analyzer.get_comm_comp_overlap(visualize=False))
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"peak RSS: this process {self_kb / 1024:.0f} MB, largest worker {children_kb / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
