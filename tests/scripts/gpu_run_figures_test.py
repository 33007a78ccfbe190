#!/usr/bin/env python3
"""scripts/gpu/gpu_run_figures.py on files written here: the bench's ratio and interval, the
profiling cost per GPU operation by level, the trainer's per-step CUPTI notes (in the format
trainer/main/step_profiler.cc writes), and the smoke comparison's tolerance.

    python3 tests/scripts/gpu_run_figures_test.py
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "gpu"))
import gpu_run_figures as figures  # noqa: E402

# One line as the trainer logs a profiled GPU step (DescribeGpuStep with DescribeRecording).
API_IDS = ("runtime:cudaLaunchKernelExC_v11060=300,driver:cuLaunchKernel=80,"
           "runtime:cudaMemcpyAsync_v3020=90,runtime:cudaMemsetAsync_v3020=10")


def note(step, api_ids=API_IDS):
    return (f"trace of step {step}: traces/x_step{step}.pb (GPU: 1000 CUPTI records (300 kernels, "
            f"90 copies, 10 memsets, 480 API calls, 120 other), 396 linked to 250 ops, 4 unlinked; "
            f"level launches (API records: 67 chosen runtime/driver calls, hw trace off, "
            f"CUPTI detached between steps); api_ids "
            f"{api_ids}; 2 dropped (2 by CUPTI, 0 buffers refused, 0 over the record limit))\n")


NOTE = note(7)


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
    def test_levels_every_second_step_profiled(self):
        with tempfile.TemporaryDirectory() as d:
            # 22 steps a run, 2 of warm-up (slow, left out); every even step profiled. Plain 4 ms;
            # host: profiled 5 ms, unprofiled 4 ms; launches: profiled 6 ms, unprofiled 4.2 ms.
            for r in (1, 2):
                write_metrics(os.path.join(d, f"plain_round{r}.jsonl"), [50.0] * 2 + [4.0] * 20)
                write_metrics(os.path.join(d, f"host_round{r}.jsonl"),
                              [50.0] * 2 + [5.0 if s % 2 == 0 else 4.0 for s in range(3, 23)])
                write_metrics(os.path.join(d, f"launches_round{r}.jsonl"),
                              [50.0] * 2 + [6.0 if s % 2 == 0 else 4.2 for s in range(3, 23)])
                with open(os.path.join(d, f"host_round{r}.txt"), "w") as f:
                    f.write("".join(f"trace of step {s}: traces/x_step{s}.pb\n"
                                    for s in range(2, 23, 2)))
                # Round 2 records 10 synchronisations a step in place of 10 launches; step 2 (a
                # warm-up step, left out) a histogram that would show if it were counted.
                ids = API_IDS if r == 1 else API_IDS.replace(
                    "ExC_v11060=300", "ExC_v11060=290,runtime:cudaStreamSynchronize_v3020=10")
                with open(os.path.join(d, f"launches_round{r}.txt"), "w") as f:
                    f.write(note(2, "runtime:cudaMalloc_v3020=5000") +
                            "".join(note(s, ids) for s in range(4, 23, 2)))
            status, text = run(["overhead", d, "--model", "lstm_small", "--warmup", "2",
                                "--every", "2", "--levels", "host launches"])
            self.assertEqual(status, 0)
            rows = {l.split()[0]: l.split() for l in text.splitlines() if l.split()}
            figures = {tuple(l.split()[:3]): l.split()[3:] for l in text.splitlines()
                       if len(l.split()) >= 4 and l.split()[1] == "lstm_small"}
            # 400 GPU operations a step (300 + 90 + 10): host's profiled steps cost 1 ms = 2.5 us
            # a GPU op, launches' 2 ms = 5 us.
            self.assertIn("400 GPU ops per step", text)
            self.assertIn("plain step 4.000 ms (median of 40)", text)
            self.assertEqual(rows["host"][1:5], ["5.000", "4.000", "1.250x", "2.50"])
            self.assertEqual(rows["launches"][1:5], ["6.000", "4.200", "1.500x", "5.00"])
            self.assertEqual(figures[("us_per_gpu_op", "lstm_small", "launches")], ["5.000"])
            self.assertEqual(figures[("unprofiled_over_plain", "lstm_small", "host")],
                             ["1.0000", "1.0000", "1.0000"])
            self.assertEqual(figures[("unprofiled_over_plain", "lstm_small", "launches")],
                             ["1.0500", "1.0500", "1.0500"])
            self.assertEqual(figures[("profiled_over_plain_level", "lstm_small", "launches")],
                             ["1.5000", "1.5000", "1.5000"])
            # 480 API records and 396 of 400 GPU records linked a step; 2 dropped in each of 20
            # timed profiled steps. host records no GPU activity: no figure, not 0.
            self.assertEqual(figures[("api_records_per_gpu_op_level", "lstm_small", "launches")],
                             ["1.200"])
            self.assertEqual(figures[("linked_share_level", "lstm_small", "launches")], ["0.9900"])
            self.assertEqual(figures[("dropped_level", "lstm_small", "launches")], ["40"])
            self.assertEqual(figures[("dropped_level", "lstm_small", "host")], ["nan"])
            self.assertEqual(figures[("api_records_per_gpu_op_level", "lstm_small", "host")],
                             ["nan"])
            # The histogram per profiled step over both rounds: (300 + 290) / 2 launches, 10 / 2
            # synchronisations; the warm-up step's cudaMalloc not counted.
            top = [l for l in text.splitlines() if l.strip().startswith("api_ids launches")]
            self.assertEqual(len(top), 1)
            self.assertIn("(20 steps, per step): runtime:cudaLaunchKernelExC_v11060=295.0, "
                          "runtime:cudaMemcpyAsync_v3020=90.0, driver:cuLaunchKernel=80.0, "
                          "runtime:cudaMemsetAsync_v3020=10.0, "
                          "runtime:cudaStreamSynchronize_v3020=5.0", top[0])
            self.assertNotIn("cudaMalloc", text)
            self.assertFalse(any(l.strip().startswith("api_ids host") for l in text.splitlines()))

    def test_api_histogram_of_a_trace_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "log.txt")
            with open(path, "w") as f:
                f.write("step 1/3 ...\n" + note(6) + note(8, "-"))
            notes = figures.trace_notes(path)
            self.assertEqual([n["step"] for n in notes], [6, 8])
            self.assertEqual(notes[0]["api_ids"]["driver:cuLaunchKernel"], 80)
            self.assertEqual(sum(notes[0]["api_ids"].values()), 480)
            self.assertEqual(notes[1]["api_ids"], {})
            self.assertEqual((notes[0]["gpu_ops"], notes[0]["api"], notes[0]["dropped"]),
                             (400, 480, 2))


class CheckBenchTest(unittest.TestCase):
    """figures.py BENCH_DIR (check.sh's bench) reads the trace lines with the same parser: drops
    are counted where the line says why ("2 dropped (2 by CUPTI, ...)")."""

    def test_overhead_rows(self):
        with tempfile.TemporaryDirectory() as d:
            # 4 warm-up steps, then odd steps 10 ms, even (profiled) steps 12 ms.
            write_metrics(os.path.join(d, "lstm_small_overhead.jsonl"),
                          [99.0] * 4 + [12.0 if s % 2 == 0 else 10.0 for s in range(5, 25)])
            with open(os.path.join(d, "lstm_small_overhead.txt"), "w") as f:
                f.write("".join(note(s) for s in range(6, 25, 2)))
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                  "scripts", "gpu", "figures.py")
            text = subprocess.run([sys.executable, script, d], check=True, capture_output=True,
                                  text=True).stdout
            row = [l.split() for l in text.splitlines() if l.startswith("lstm_small ")][-1]
            # plain, profiled, overhead, records, kernels, copies, dropped (2 in each of 10 steps)
            self.assertEqual(row[1:8], ["10.00", "12.00", "20.0%", "1000", "300", "90", "20"])


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
