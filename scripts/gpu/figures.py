#!/usr/bin/env python3
"""The GPU figures of scripts/gpu/check.sh's bench stage and of scripts/gpu/gpu-run.sh's stages,
from the files they wrote:

    python3 scripts/gpu/figures.py BENCH_DIR                  check.sh's bench (below)
    python3 scripts/gpu/figures.py runs DIR --gpu G --date D --out FILE [--warmup N] [--rehearsal]
    python3 scripts/gpu/figures.py overhead DIR [--model M] [--warmup N] [--every K] [--levels "..."]
    python3 scripts/gpu/figures.py smoke REFERENCE_DIR RUN_DIR
    python3 scripts/gpu/figures.py losses METRICS.jsonl

gpu-run.sh's subcommands are documented at their functions; check.sh's bench:

- Step time, ours against PyTorch on the same GPU and shapes: the median of each round's timed
  steps (ours: the steps after --warmup_steps of <model>_ours_round<R>.jsonl; PyTorch:
  torch_round<R>.json), the rounds alternating, and the ratio of the medians over all rounds.
- Profiling overhead: one run per model with every second step profiled
  (<model>_overhead.jsonl): median profiled step against median unprofiled step.
- Per profiled step: CUPTI records and drops (from the trainer's "trace of step" lines in
  <model>_overhead.txt) and the trace's size (the .pb files of overhead_<model>/).
"""
import glob
import json
import os
import re
import sys

import gpu_run_figures

MODELS = (("lstm_small", "lstm_small_step_ms"), ("lstm_medium", "lstm_medium_step_ms"),
          ("resnet50", "resnet50_img224_b64_step_ms"))
# The step times, trace lines and medians are gpu_run_figures' (one parser for both scripts).
median = gpu_run_figures.median


def torch_result(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return {}  # that round of PyTorch failed: its log says why


def main():
    if len(sys.argv) > 1 and sys.argv[1] in gpu_run_figures.COMMANDS:
        sys.exit(gpu_run_figures.main(sys.argv[1:]))
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit(__doc__)
    d = sys.argv[1]
    out = []
    out.append("step time (ms, median of timed steps; rounds alternate PyTorch, ours)")
    out.append(f"{'model':<12} {'round':>5} {'pytorch':>9} {'ours':>9}")
    for model, torch_key in MODELS:
        torch_all, ours_all = [], []
        for rnd in sorted(glob.glob(os.path.join(d, "torch_round*.json"))):
            r = re.search(r"round(\d+)", rnd).group(1)
            torch_ms = torch_result(rnd).get(torch_key, float("nan"))
            ours = gpu_run_figures.step_times(os.path.join(d, f"{model}_ours_round{r}.jsonl"), 5)
            torch_all.append(torch_ms)
            ours_all.extend(ours)
            out.append(f"{model:<12} {r:>5} {torch_ms:9.2f} {median(ours):9.2f}")
        ratio = median(ours_all) / median(torch_all) if torch_all else float("nan")
        out.append(f"{model:<12} {'all':>5} {median(torch_all):9.2f} {median(ours_all):9.2f}"
                   f"   ours/pytorch {ratio:.2f}x")
    out.append("")
    out.append("profiling overhead (every second step profiled, steps after warm-up)")
    out.append(f"{'model':<12} {'plain ms':>9} {'profiled':>9} {'overhead':>9} {'records/step':>13} "
               f"{'kernels':>8} {'copies':>7} {'dropped':>8} {'trace KB/step':>14}")
    for model in ("lstm_small", "resnet50"):
        path = os.path.join(d, f"{model}_overhead.jsonl")
        plain = median(gpu_run_figures.step_times(path, 4, keep=lambda s: s % 2 == 1))
        profiled = median(gpu_run_figures.step_times(path, 4, keep=lambda s: s % 2 == 0))
        traces = gpu_run_figures.trace_notes(os.path.join(d, f"{model}_overhead.txt"))
        records = median([t["records"] for t in traces])
        kernels = median([t["kernels"] for t in traces])
        copies = median([t["copies"] for t in traces])
        dropped = sum(t["dropped"] for t in traces)
        sizes = [os.path.getsize(p) for p in glob.glob(os.path.join(d, f"overhead_{model}", "*.pb"))]
        out.append(f"{model:<12} {plain:9.2f} {profiled:9.2f} {100 * (profiled / plain - 1):8.1f}% "
                   f"{records:13.0f} {kernels:8.0f} {copies:7.0f} {dropped:8d} "
                   f"{median(sizes) / 1024:14.0f}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
