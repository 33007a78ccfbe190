#!/usr/bin/env python3
"""Our training-step time against PyTorch's, side by side in one run, for the same models and shapes.

    python3 scripts/bench/compare_with_pytorch.py [--benchmark build/ci/tests/trainer/trainer_benchmark]
                                                  [--rounds 3] [--threads 2]

The two sides alternate in rounds (ours, PyTorch, ours, PyTorch, ...) so that a change in the
machine's load during the run hits both; each side's figure is the median over its rounds of the
per-round median step time. Ours comes from `trainer_benchmark` (the unprofiled steps of
ProfileOverhead, `off_ms`), PyTorch's from scripts/bench/torch_step_time.py's models (PTB LSTM
small batch 20; ResNet-50 v1, 64x64 images, batch 8), both on the CPU with the same thread count.
Prints one JSON object with both medians and ratio = ours / PyTorch (targets: LSTM <= 1.5,
ResNet-50 <= 2). A development-time comparison: nothing in the product or CI imports torch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch_step_time  # noqa: E402

MODELS = (  # our benchmark case, PyTorch step factory, key
    ("lstm_small_batch20", torch_step_time.lstm_step_fn, "lstm_small"),
    ("resnet50_img64_batch8", torch_step_time.resnet_step_fn, "resnet50_img64_b8"),
)


def ours_step_ms(binary, case, min_time, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run(
        [binary, f"--benchmark_filter=ProfileOverhead/{case}", f"--benchmark_min_time={min_time}",
         "--benchmark_format=json"], check=True, capture_output=True, text=True, env=env).stdout
    runs = json.loads(out)["benchmarks"]
    if not runs or "off_ms" not in runs[0]:
        raise SystemExit(f"{binary}: no ProfileOverhead/{case} result (error: "
                         f"{runs[0].get('error_message') if runs else 'none'})")
    return runs[0]["off_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", default="build/ci/tests/trainer/trainer_benchmark")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10, help="PyTorch steps timed per round")
    parser.add_argument("--min_time", type=float, default=3.0,
                        help="seconds of our benchmark per round")
    args = parser.parse_args()
    if not os.access(args.benchmark, os.X_OK):
        parser.error(f"{args.benchmark}: not an executable (build the trainer_benchmark target)")
    if args.rounds < 1 or args.steps < 10:
        parser.error("--rounds must be >= 1 and --steps >= 10")
    torch.set_num_threads(args.threads)

    result = {"torch_version": torch.__version__, "threads": args.threads, "rounds": args.rounds}
    for case, make_torch_step, key in MODELS:
        torch_step = make_torch_step()
        ours, theirs = [], []
        for round_index in range(args.rounds):
            ours.append(ours_step_ms(args.benchmark, case, args.min_time, args.threads))
            theirs.append(statistics.median(torch_step_time.time_steps(torch_step, 2, args.steps)))
            print(f"{key} round {round_index + 1}: ours {ours[-1]:.1f} ms, "
                  f"PyTorch {theirs[-1]:.1f} ms", file=sys.stderr)
        result[f"{key}_ours_ms"] = round(statistics.median(ours), 2)
        result[f"{key}_pytorch_ms"] = round(statistics.median(theirs), 2)
        result[f"{key}_ratio"] = round(statistics.median(ours) / statistics.median(theirs), 3)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
