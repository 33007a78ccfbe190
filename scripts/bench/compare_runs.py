#!/usr/bin/env python3
"""Validates `stepscope diff` over steps on runs of the bundled trainer whose differences are known.

A/A: the same configuration on both sides (every flagged op is a false positive).
A/B: PTB LSTM batch 20 vs 40 (MatMul and the softmax grow, the step grows); ResNet-14 with two
OpenBLAS threads vs one (convolutions get slower); two-device LSTM with tensor fusion off vs on
(the fusion-buffer copies appear).

The sides run interleaved, A B B A A B ..., `--rounds` runs of `--steps` profiled steps each after
two warm-up steps, so a change of the machine's load during the experiment falls on both sides
alike (a steady drift too: each side runs first in half the rounds).
Prints, per experiment, the step-time change, the verdicts per table, what was flagged, whether the
gate (`--fail-on-regression 10`) tripped, and whether the expected findings were made.

    scripts/bench/compare_runs.py --train build/release/trainer/main/stepscope-train \
        --stepscope build/release/profiler/cli/stepscope [--rounds 3] [--steps 6] [--only lstm-aa]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

LSTM = ["--model", "lstm"]
RESNET = ["--model", "resnet50", "--depth", "14", "--image_size", "32", "--batch_size", "16"]

# name: (side A flags, side A env, side B flags, side B env, expectations)
# expectations: {(table, name): verdict}; "step" is the step time.
EXPERIMENTS = {
    "lstm-aa": (LSTM, {}, LSTM, {}, {}),
    "lstm-batch": (LSTM + ["--batch_size", "20"], {}, LSTM + ["--batch_size", "40"], {},
                   {("op type", "MatMul"): "regressed",
                    ("op type", "SparseSoftmaxCrossEntropyWithLogits"): "regressed",
                    ("step", "step"): "regressed"}),
    "resnet-aa": (RESNET, {"OPENBLAS_NUM_THREADS": "1"}, RESNET, {"OPENBLAS_NUM_THREADS": "1"}, {}),
    "resnet-threads": (RESNET, {"OPENBLAS_NUM_THREADS": "2"}, RESNET, {"OPENBLAS_NUM_THREADS": "1"},
                       {("op type", "Conv2D"): "regressed",
                        ("op type", "Conv2DBackpropFilter"): "regressed",
                        ("op type", "Conv2DBackpropInput"): "regressed"}),
    "lstm-fusion": (LSTM + ["--devices", "cpu:2"], {},
                    LSTM + ["--devices", "cpu:2", "--fusion_threshold_bytes", "67108864"], {},
                    {("op type", "MEMCPY_IN_FUSION_BUFFER"): "new",
                     ("op type", "MEMCPY_OUT_FUSION_BUFFER"): "new"}),
}

TABLES = (("op type", "by_op_type"), ("node", "by_node"), ("kernel", "by_kernel"))


def train(binary, flags, env, steps, directory):
    os.makedirs(directory, exist_ok=True)
    last = 2 + steps
    command = [binary] + flags + ["--steps", str(last), "--warmup_steps", "2", "--profile",
                                  "--profile_steps", "3-%d" % last, "--profile_dir", directory]
    subprocess.run(command, check=True, env=dict(os.environ, **env), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def diff(stepscope, a_dirs, b_dirs, gate):
    command = [stepscope, "diff"] + a_dirs + ["--vs"] + b_dirs + ["--json", "--fail-on-regression", gate]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in (0, 3):
        sys.exit("stepscope diff failed (%d): %s" % (result.returncode, result.stderr))
    return json.loads(result.stdout), result.returncode


def ms(ns):
    return "%.3f ms" % (ns / 1e6)


def run(args, name):
    flags_a, env_a, flags_b, env_b, expect = EXPERIMENTS[name]
    root = os.path.join(args.out, name)
    shutil.rmtree(root, ignore_errors=True)
    a_dirs, b_dirs = [], []
    started = time.time()
    for r in range(args.rounds):
        sides = [("a", flags_a, env_a, a_dirs), ("b", flags_b, env_b, b_dirs)]
        for side, flags, env, dirs in (sides if r % 2 == 0 else sides[::-1]):
            directory = os.path.join(root, side, "round%d" % r)
            train(args.train, flags, env, args.steps, directory)
            dirs.append(directory)
    trained = time.time() - started
    started = time.time()
    doc, code = diff(args.stepscope, a_dirs, b_dirs, args.gate)
    analysed = time.time() - started

    step = doc["step"]
    print("== %s: %d vs %d steps (training %.0f s, diff %.2f s)" % (
        name, doc["a"]["steps"], doc["b"]["steps"], trained, analysed))
    print("   step  A %s  B %s  change %+.1f%%  CI [%s, %s]  p %.2g: %s" % (
        ms(step["median_a_ns"]), ms(step["median_b_ns"]), 100 * step["change"], ms(step["ci_low_ns"]),
        ms(step["ci_high_ns"]), step["p"], step["verdict"]))
    compared = flagged = 0
    verdicts = {}
    for table, key in TABLES:
        counts = {}
        for row in doc[key]:
            counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
            verdicts[(table, row["name"])] = row["verdict"]
            if row["verdict"] in ("regressed", "improved", "unchanged"):
                compared += 1
            if row["verdict"] in ("regressed", "improved"):
                flagged += 1
        if doc[key]:
            print("   %-8s %s" % (table, ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()))))
        shown = [row for row in doc[key] if row["verdict"] != "unchanged"][:args.show]
        for row in shown:
            print("     %-9s %-48.48s %+7.1f%%  %s -> %s  q %.2g" % (
                row["verdict"], row["name"], 100 * row["change"], ms(row["median_a_ns"]),
                ms(row["median_b_ns"]), row["q"]))
    verdicts[("step", "step")] = step["verdict"]
    rate = flagged / compared if compared else 0
    print("   flagged %d of %d compared rows (%.1f%%); gate --fail-on-regression %s: %s" % (
        flagged, compared, 100 * rate, args.gate, "FAILED (exit 3)" if code == 3 else "passed"))
    ok = True
    for key, wanted in expect.items():
        got = verdicts.get(key, "absent")
        ok &= got == wanted
        print("   expect %-8s %-40s %-9s got %-9s %s" % (key[0], key[1], wanted, got, "ok" if got == wanted else "MISSED"))
    if not expect:
        ok = rate <= 0.05 and code == 0
        print("   A/A: %s (at most 5%% flagged, gate passes)" % ("ok" if ok else "NOT MET"))
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", default="build/release/trainer/main/stepscope-train")
    parser.add_argument("--stepscope", default="build/release/profiler/cli/stepscope")
    parser.add_argument("--out", default="build/compare-runs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6, help="profiled steps per round")
    parser.add_argument("--gate", default="10")
    parser.add_argument("--show", type=int, default=6, help="flagged rows listed per table")
    parser.add_argument("--only", action="append", choices=sorted(EXPERIMENTS))
    args = parser.parse_args()
    results = {name: run(args, name) for name in (args.only or EXPERIMENTS)}
    print("\n" + "  ".join("%s %s" % (name, "ok" if ok else "NOT MET") for name, ok in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
