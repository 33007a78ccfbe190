#!/usr/bin/env python3
"""scripts/gpu/gpu_run_figures.py on files written here: the bench's ratio and interval, the
profiling cost per GPU operation by level, the trainer's per-step CUPTI notes (in the format
trainer/main/step_profiler.cc writes), and the smoke comparison's tolerance.

    python3 tests/scripts/gpu_run_figures_test.py
"""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "gpu"))
import gpu_run_figures as figures  # noqa: E402

# One line as the trainer logs a profiled GPU step (DescribeGpuStep).
NOTE = ("trace of step 7: traces/x_step7.pb (GPU: 1000 CUPTI records (300 kernels, 90 copies, "
        "10 memsets, 480 API calls, 120 other), 396 linked to 250 ops, 4 unlinked, 2 dropped "
        "(2 by CUPTI, 0 buffers refused, 0 over the record limit))\n")


def write_metrics(path, times_ms, first_step=1):
    with open(path, "w") as f:
        for i, t in enumerate(times_ms):
            f.write(json.dumps({"step": first_step + i, "loss": 1.0, "step_time_ms": t}) + "\n")
        f.write(json.dumps({"summary": True, "steps": len(times_ms)}) + "\n")


def run(args):
    out = io.StringIO()
    with redirect_stdout(out):
        status = figures.main(args)
    return status, out.getvalue()


class RunsTest(unittest.TestCase):
    def test_ratio_interval_and_note_figures(self):
        with tempfile.TemporaryDirectory() as d:
            for r in (1, 2):
                for model in figures.MODELS:
                    # 2 warm-up steps (slow, left out), then 50 steps around 10 ms plain and
                    # 11 ms profiled.
                    plain = [100.0, 100.0] + [10.0 + 0.01 * ((i * 7) % 11) for i in range(50)]
                    prof = [100.0, 100.0] + [11.0 + 0.01 * ((i * 5) % 13) for i in range(50)]
                    write_metrics(os.path.join(d, f"{model}_plain_round{r}.jsonl"), plain)
                    write_metrics(os.path.join(d, f"{model}_profiled_round{r}.jsonl"), prof)
                    with open(os.path.join(d, f"{model}_profiled_round{r}.txt"), "w") as f:
                        f.write("step 1/52 ...\n" + NOTE + NOTE)
                with open(os.path.join(d, f"torch_round{r}.json"), "w") as f:
                    json.dump({"step_ms": {"lstm_small": [5.0] * 50, "resnet50": [8.0] * 50}}, f)
            out = os.path.join(d, "runs", "h200-2026-12-02.txt")
            status, _ = run(["runs", d, "--gpu", "h200", "--date", "2026-12-02", "--out", out,
                             "--warmup", "2"])
            self.assertEqual(status, 0)
            with open(out) as f:
                lines = {tuple(l.split()[:2]): l.split()[2:] for l in f if l[0].islower()
                         and len(l.split()) >= 3 and not l.startswith("model")}
            ratio, lo, hi = map(float, lines[("profiled_over_plain", "lstm_small")])
            plain_median = sorted(10.0 + 0.01 * ((i * 7) % 11) for i in range(50))[24:26]
            prof_median = sorted(11.0 + 0.01 * ((i * 5) % 13) for i in range(50))[24:26]
            self.assertAlmostEqual(ratio, (sum(prof_median) / 2) / (sum(plain_median) / 2), places=4)
            self.assertLessEqual(lo, ratio)
            self.assertGreaterEqual(hi, ratio)
            self.assertLess(hi - lo, 0.05)
            self.assertAlmostEqual(float(lines[("step_over_pytorch", "lstm_small")][0]),
                                   (sum(plain_median) / 2) / 5.0, places=3)
            self.assertEqual(lines[("step_over_pytorch", "lstm_medium")], ["nan"])
            # 480 API records for 300 + 90 + 10 GPU operations; 396 of 400 records linked.
            self.assertEqual(lines[("api_records_per_gpu_op", "resnet50")], ["1.200"])
            self.assertEqual(lines[("linked_share", "resnet50")], ["0.9900"])
            self.assertEqual(lines[("dropped", "resnet50")], ["8"])  # 2 a step, 4 steps


class OverheadTest(unittest.TestCase):
    def test_cost_per_gpu_op_by_level(self):
        with tempfile.TemporaryDirectory() as d:
            # 2 warm-up steps, then 20 timed: plain 4 ms, each level 1 ms more than the one before.
            for r in (1, 2):
                write_metrics(os.path.join(d, f"plain_round{r}.jsonl"), [50.0] * 2 + [4.0] * 20)
                for i, level in enumerate(("host", "all")):
                    write_metrics(os.path.join(d, f"{level}_round{r}.jsonl"),
                                  [50.0] * 2 + [5.0 + i] * 20)
                    with open(os.path.join(d, f"{level}_round{r}.txt"), "w") as f:
                        f.write(NOTE * 3)
            status, text = run(["overhead", d, "--warmup", "2", "--levels", "host all"])
            self.assertEqual(status, 0)
            rows = {l.split()[0]: l.split() for l in text.splitlines() if l.split()}
            # 400 GPU operations a step: host costs 1 ms = 2.5 us per op, all 2 ms = 5 us.
            self.assertIn("400 GPU ops per step", text)
            self.assertEqual(rows["host"][1:5], ["5.000", "1.250x", "2.50", "1.20"])
            self.assertEqual(rows["all"][1:5], ["6.000", "1.500x", "5.00", "1.20"])
            self.assertEqual(rows["all"][5], "12")  # 2 dropped a step, 6 steps


class SmokeTest(unittest.TestCase):
    def test_tolerance(self):
        with tempfile.TemporaryDirectory() as d:
            ref, ok, bad = (os.path.join(d, x) for x in ("ref", "ok", "bad"))
            for folder in (ref, ok, bad):
                os.makedirs(folder)
            losses = [184.0, 167.5, 150.25]
            with open(os.path.join(ref, "lstm_small.jsonl"), "w") as f:
                for i, l in enumerate(losses):
                    f.write(json.dumps({"step": i + 1, "loss": l}) + "\n")
            with open(os.path.join(ok, "lstm_small.jsonl"), "w") as f:
                for i, l in enumerate(losses):
                    f.write(json.dumps({"step": i + 1, "loss": l * (1 + 5e-5)}) + "\n")
            with open(os.path.join(bad, "lstm_small.jsonl"), "w") as f:
                for i, l in enumerate(losses):
                    f.write(json.dumps({"step": i + 1, "loss": l * (1 + 2e-4 * i)}) + "\n")
            self.assertEqual(run(["smoke", ref, ok])[0], 0)
            status, text = run(["smoke", ref, bad])
            self.assertEqual(status, 1)
            self.assertIn("OVER the tolerance", text)


if __name__ == "__main__":
    unittest.main()
