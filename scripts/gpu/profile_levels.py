#!/usr/bin/env python3
"""The table of scripts/gpu/profile_levels.sh's runs: per model and --profile_level, the median
plain step, the median profiled and unprofiled steps of the profiled run (every second step),
microseconds per GPU op the profiling adds, unprofiled steps against plain, API records and links
per GPU op from the trainer's "trace of step" lines, and the API calls recorded most.
Also one line per model `profiled_over_plain <model> <median> <ci_low> <ci_high>` for the default
level (launches): the ratio of medians with a bootstrap 95 % interval.

    scripts/gpu/profile_levels.py OUT_DIR
"""
import glob
import json
import os
import random
import re
import statistics
import sys

WARMUP = 20
TRACE = re.compile(r"trace of step (\d+): \S+ \(GPU: (\d+) CUPTI records \((\d+) kernels, "
                   r"(\d+) copies, (\d+) memsets, (\d+) API calls, (\d+) other\), (\d+) linked to "
                   r"(\d+) ops, (\d+) unlinked(.*?)(\d+) dropped\)")
API_IDS = re.compile(r"api_ids ([^;\s]+)")
ORDER = ["host", "attached", "activity", "launches", "all", "launches+stay", "launches+hw"]


def level_key(level):
    return (ORDER.index(level) if level in ORDER else len(ORDER), level)


def steps(path):
    if not os.path.exists(path):
        return []
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return [r for r in rows if "step_time_ms" in r and r.get("step", 0) > WARMUP]


def med(values):
    return statistics.median(values) if values else float("nan")


def bootstrap_ratio(num, den, n=2000, seed=1):
    if not num or not den:
        return float("nan"), float("nan")
    rng = random.Random(seed)
    ratios = sorted(med(rng.choices(num, k=len(num))) / med(rng.choices(den, k=len(den)))
                    for _ in range(n))
    return ratios[int(0.025 * n)], ratios[int(0.975 * n) - 1]


def main():
    d = sys.argv[1]
    runs = {}
    for path in glob.glob(os.path.join(d, "*_r*.jsonl")):
        name = os.path.basename(path)
        m = re.match(r"(lstm_small|lstm_medium|resnet50)_(.+)_r\d+\.jsonl$", name)
        if not m:
            continue
        model, level = m.groups()
        entry = runs.setdefault(model, {}).setdefault(level, {"rows": [], "traces": [], "api": {}})
        entry["rows"] += steps(path)
        log = path[:-len(".jsonl")] + ".txt"
        text = open(log).read() if os.path.exists(log) else ""
        entry["traces"] += [m.groups() for m in TRACE.finditer(text)]
        for hist in API_IDS.findall(text):
            for item in hist.split(","):
                if "=" in item:
                    call, count = item.rsplit("=", 1)
                    entry["api"][call] = entry["api"].get(call, 0) + int(count)
    out = []
    ratios = []
    for model in sorted(runs):
        plain_rows = runs[model].get("plain", {"rows": []})["rows"]
        plain = [r["step_time_ms"] for r in plain_rows]
        out.append(f"{model}: plain step {med(plain):.3f} ms (median of {len(plain)})")
        out.append(f"{'level':<16} {'profiled':>9} {'unprof.':>9} {'unprof/plain':>12} "
                   f"{'GPU ops':>8} {'us/GPU op':>9} {'API/op':>7} {'linked':>7} {'dropped':>7}")
        # The levels without GPU records (host, attached) launch the same GPU ops: count them
        # from the levels that record them.
        counted = [int(x[2]) + int(x[3]) + int(x[4]) for e in runs[model].values()
                   for x in e["traces"]]
        for level, entry in sorted(runs[model].items(), key=lambda kv: level_key(kv[0])):
            if level == "plain":
                continue
            prof = [r["step_time_ms"] for r in entry["rows"] if r["step"] % 2 == 0]
            unprof = [r["step_time_ms"] for r in entry["rows"] if r["step"] % 2 == 1]
            t = entry["traces"]
            ops = med([int(x[2]) + int(x[3]) + int(x[4]) for x in t]) if t else med(counted)
            api = med([int(x[5]) for x in t]) if t else float("nan")
            gpu = [int(x[7]) + int(x[9]) for x in t]
            linked = (sum(int(x[7]) for x in t) / sum(gpu)) if gpu and sum(gpu) else float("nan")
            dropped = sum(int(x[11]) for x in t)
            per_op = (med(prof) - med(plain)) * 1000 / ops
            out.append(f"{level:<16} {med(prof):9.3f} {med(unprof):9.3f} "
                       f"{med(unprof) / med(plain):12.3f} {ops:8.0f} {per_op:9.2f} "
                       f"{api / ops if t else float('nan'):7.2f} {100 * linked:6.1f}% {dropped:7d}")
            if level == "launches":
                lo, hi = bootstrap_ratio(prof, plain)
                ratios.append(f"profiled_over_plain {model} {med(prof) / med(plain):.4f} "
                              f"{lo:.4f} {hi:.4f}")
        for level, entry in sorted(runs[model].items(), key=lambda kv: level_key(kv[0])):
            top = sorted(entry["api"].items(), key=lambda kv: -kv[1])[:8]
            if top:
                out.append(f"  api {level}: " + ", ".join(f"{k}={v}" for k, v in top))
        out.append("")
    out += ratios
    print("\n".join(out))


if __name__ == "__main__":
    main()
