#!/usr/bin/env python3
"""The Python module's speed goals (docs/python.md): stepscope.load of a big trace against
`stepscope summary` of it, and a generated trace's slices to pandas.

Usage: PYTHONPATH=build/release/python scripts/bench/python_speed.py TRACE CLI [--slices N]
(TRACE: e.g. the 1 GB Kineto JSON that stepscope_analysis_benchmark --json_mb=1000 writes;
CLI: build/release/profiler/cli/stepscope). Prints wall and CPU seconds of each, best of 3."""

import argparse
import resource
import subprocess
import time

import stepscope


def best(runs, measure):
    return min((measure() for _ in range(runs)), key=lambda r: r[0])


def timed(action):
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def child_timed(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("cli")
    parser.add_argument("--slices", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    summary = best(args.runs, lambda: child_timed([args.cli, "summary", args.trace]))
    load = best(args.runs, lambda: timed(lambda: stepscope.load(args.trace)))
    print(f"stepscope summary: {summary[0]:.2f} s wall, {summary[1]:.2f} s CPU")
    print(f"stepscope.load:    {load[0]:.2f} s wall, {load[1]:.2f} s CPU "
          f"({load[0] / summary[0]:.2f}x the summary's wall time; goal 1.2x)")

    trace = stepscope.synthetic(args.slices)

    def fresh_frame():
        trace._cache.clear()  # unpack the slices again each run
        trace.to_pandas()

    frame = best(args.runs, lambda: timed(fresh_frame))
    print(f"to_pandas of {args.slices} generated slices: {frame[0]:.2f} s wall, {frame[1]:.2f} s CPU "
          f"(goal: 1 s per 10 M)")


if __name__ == "__main__":
    main()
