"""Figures of scripts/gpu/gpu-run.sh's stages (called through scripts/gpu/figures.py).

  losses METRICS.jsonl            the step and loss of each step line (the committed CPU
                                  references of the smoke stage)
  smoke REFERENCE_DIR RUN_DIR     each run's losses against the CPU reference of the same name:
                                  worst relative difference; exit 1 above the tolerance
  overhead DIR --model M --every K --levels "L ..."
                                  per --profile_level, from runs with every K-th step profiled:
                                  median profiled and unprofiled steps, the profiled steps' cost
                                  over plain per GPU operation (kernels, copies and memsets per
                                  step, from the trace lines), the unprofiled steps against plain
                                  (bootstrap 95 % interval), API records per GPU op, linked
                                  share, drops, and the API calls recorded most (the `api_ids`
                                  histograms); one machine-readable line per level and figure:
                                    us_per_gpu_op <model> <level> <x>
                                    profiled_over_plain_level <model> <level> <median> <lo> <hi>
                                    unprofiled_over_plain <model> <level> <median> <lo> <hi>
                                    api_records_per_gpu_op_level <model> <level> <x>
                                    linked_share_level <model> <level> <x>
                                    dropped_level <model> <level> <n>
  runs DIR --gpu G --date D --out FILE
                                  the bench: per model the profiled/plain ratio of medians with a
                                  bootstrap 95 % interval, ours/PyTorch, the unprofiled steps of a
                                  --profile_every 4 run against plain, API records per GPU op,
                                  drops and linked records. FILE (docs/gpu-runs/<gpu>-<date>.txt)
                                  holds the tables and one machine-readable line per figure:
                                    profiled_over_plain <model> <median> <ci_low> <ci_high>
                                    step_over_pytorch <model> <ratio>
                                    every4_unprofiled_over_plain <model> <median> <ci_low> <ci_high>
                                    api_records_per_gpu_op <model> <x>
                                    linked_share <model> <x>
                                    dropped <model> <n>
                                  (nan where a side is missing: its log says why).
"""
import argparse
import json
import os
import random
import re
import statistics

COMMANDS = ("losses", "smoke", "overhead", "runs")
MODELS = ("lstm_small", "lstm_medium", "resnet50")
# Relative tolerance of the smoke comparison per run: the LSTM's GPU kernels agree with the CPU's
# to about 1e-6; ResNet-50 from scratch amplifies rounding from step 2 on (docs/gpu.md).
SMOKE_TOLERANCE = {"lstm_small": 1e-4, "lstm_medium": 1e-4, "resnet50_b32_lr0.001": 2e-2}
NAN = float("nan")


def metric_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def step_times(path, warmup, keep=lambda step: True):
    """Step times (ms) of the steps after `warmup` whose number passes `keep`."""
    return [l["step_time_ms"] for l in metric_lines(path)
            if "step_time_ms" in l and l["step"] > warmup and keep(l["step"])]


def median(values):
    return statistics.median(values) if values else NAN


def bootstrap_ratio(num, den, resamples=2000, seed=1):
    """median(num) / median(den) and a percentile bootstrap 95 % interval (both resampled)."""
    if not num or not den:
        return NAN, NAN, NAN
    rng = random.Random(seed)
    ratios = sorted(statistics.median(rng.choices(num, k=len(num))) /
                    statistics.median(rng.choices(den, k=len(den))) for _ in range(resamples))
    return (median(num) / median(den), ratios[int(0.025 * resamples)],
            ratios[int(0.975 * resamples) - 1])


TRACE_FIELDS = {"records": r"(\d+) CUPTI records", "kernels": r"(\d+) kernels",
                "copies": r"(\d+) copies", "memsets": r"(\d+) memsets", "api": r"(\d+) API calls",
                "linked": r"(\d+) linked to", "unlinked": r"(\d+) unlinked",
                "dropped": r"(\d+) dropped"}


# The per-step histogram of recorded API calls: "api_ids runtime:cudaLaunchKernel_v7000=700,..."
# up to the next ';' ("-" when none).
API_IDS = re.compile(r"api_ids ([^;\s]+)")


def api_histogram(text):
    """{call: count} of one `api_ids` field ("-" is empty)."""
    counts = {}
    for item in text.split(","):
        call, sep, count = item.rpartition("=")
        if sep and count.isdigit():
            counts[call] = counts.get(call, 0) + int(count)
    return counts


def trace_notes(path):
    """The trainer's per-step CUPTI counts ("trace of step N: PATH (GPU: ...)") in a log, with the
    step number and the `api_ids` histogram where the line has one."""
    notes = []
    if not os.path.exists(path):
        return notes
    with open(path) as f:
        for line in f:
            if not line.startswith("trace of step") or "GPU:" not in line:
                continue
            note = {}
            for key, pattern in TRACE_FIELDS.items():
                m = re.search(pattern, line)
                note[key] = int(m.group(1)) if m else 0
            note["gpu_ops"] = note["kernels"] + note["copies"] + note["memsets"]
            note["step"] = int(re.match(r"trace of step (\d+)", line).group(1))
            m = API_IDS.search(line)
            note["api_ids"] = api_histogram(m.group(1)) if m else {}
            notes.append(note)
    return notes


def losses(args):
    for line in metric_lines(args[0]):
        if "step" in line and "loss" in line:
            print(json.dumps({"step": line["step"], "loss": line["loss"]}))
    return 0


def smoke(args):
    ref_dir, run_dir = args
    status, compared = 0, 0
    for name, tolerance in SMOKE_TOLERANCE.items():
        run = {l["step"]: l["loss"] for l in metric_lines(os.path.join(run_dir, name + ".jsonl"))
               if "loss" in l and "step" in l}
        if not run:
            continue
        ref = {l["step"]: l["loss"] for l in metric_lines(os.path.join(ref_dir, name + ".jsonl"))}
        steps = sorted(set(run) & set(ref))
        if not steps:
            print(f"{name}: no step in common with {ref_dir}/{name}.jsonl")
            status = 1
            continue
        worst = max(abs(run[s] - ref[s]) / max(abs(ref[s]), 1e-12) for s in steps)
        verdict = "ok" if worst <= tolerance else f"OVER the tolerance {tolerance:g}"
        print(f"{name}: {len(steps)} steps against the CPU reference, worst relative difference "
              f"{worst:.2e} ({verdict}); first loss {run[steps[0]]:.6f} (CPU {ref[steps[0]]:.6f})")
        compared += 1
        if worst > tolerance:
            status = 1
    if not compared:
        print(f"smoke: no run of {run_dir} to compare")
        return 1
    return status


def rounds_in(d, label):
    """The round numbers of DIR/<label>_round<R>.jsonl."""
    pattern = re.compile(re.escape(label) + r"_round(\d+)\.jsonl$")
    return sorted(int(m.group(1)) for f in os.listdir(d) for m in [pattern.match(f)] if m)


def level_figures(d, label, warmup, every):
    """One run label's pooled rounds: profiled and unprofiled step times (every K-th step is a
    profiled one, the trainer's --profile_every rule) and its trace notes."""
    prof, unprof, notes = [], [], []
    for r in rounds_in(d, label):
        base = os.path.join(d, f"{label}_round{r}")
        prof += step_times(base + ".jsonl", warmup, keep=lambda s: s % every == 0)
        unprof += step_times(base + ".jsonl", warmup, keep=lambda s: s % every != 0)
        notes += [n for n in trace_notes(base + ".txt") if n["step"] > warmup]
    return prof, unprof, notes


def overhead_row(level, plain, gpu_ops, prof, unprof, notes):
    """The table row and machine-readable lines of one level."""
    ops = sum(n["gpu_ops"] for n in notes)
    linked = sum(n["linked"] for n in notes)
    recorded = linked + sum(n["unlinked"] for n in notes)
    api = sum(n["api"] for n in notes) / ops if ops else NAN
    share = linked / recorded if recorded else NAN
    dropped = sum(n["dropped"] for n in notes)
    per_op = (median(prof) - median(plain)) * 1e3 / gpu_ops if gpu_ops else NAN
    p_ratio, p_lo, p_hi = bootstrap_ratio(prof, plain)
    u_ratio, u_lo, u_hi = bootstrap_ratio(unprof, plain)
    # A level that records no GPU activity (host, attached; any on a CPU) has no share or drops.
    tail = f"{100 * share:6.1f}% {dropped:7d}" if recorded else f"{'-':>7} {'-':>7}"
    row = (f"{level:<14} {median(prof):9.3f} {median(unprof):9.3f} {p_ratio:9.3f}x "
           f"{per_op:9.2f} {u_ratio:8.4f} [{u_lo:.4f}, {u_hi:.4f}] {api:7.2f} {tail}")
    lines = [f"us_per_gpu_op {{model}} {level} {per_op:.3f}",
             f"profiled_over_plain_level {{model}} {level} {p_ratio:.4f} {p_lo:.4f} {p_hi:.4f}",
             f"unprofiled_over_plain {{model}} {level} {u_ratio:.4f} {u_lo:.4f} {u_hi:.4f}",
             f"api_records_per_gpu_op_level {{model}} {level} {api:.3f}",
             f"linked_share_level {{model}} {level} {share:.4f}",
             f"dropped_level {{model}} {level} {dropped if notes else 'nan'}"]
    return row, lines


def api_top(level, notes, count=10):
    """The API calls recorded most in a level's profiled steps, per step (None without any)."""
    total = {}
    for n in notes:
        for call, c in n["api_ids"].items():
            total[call] = total.get(call, 0) + c
    with_ids = sum(1 for n in notes if n["api_ids"])
    if not total:
        return None
    top = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:count]
    return (f"  api_ids {level} ({with_ids} steps, per step): " +
            ", ".join(f"{call}={c / with_ids:.1f}" for call, c in top))


def overhead(args):
    p = argparse.ArgumentParser(prog="figures.py overhead")
    p.add_argument("dir")
    p.add_argument("--model", default="lstm_small")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--every", type=int, default=2)
    p.add_argument("--levels", default="host attached activity launches all launches+stay launches+hw")
    a = p.parse_args(args)
    plain = [t for r in rounds_in(a.dir, "plain")
             for t in step_times(os.path.join(a.dir, f"plain_round{r}.jsonl"), a.warmup)]
    runs = {level: level_figures(a.dir, level, a.warmup, a.every) for level in a.levels.split()}
    # Every level launches the same GPU ops; host and attached record none, so the count is that
    # of the levels that do.
    gpu_ops = median([n["gpu_ops"] for _, _, notes in runs.values() for n in notes if n["gpu_ops"]])
    print(f"profiling cost by level, {a.model}: one step in {a.every} profiled, "
          f"{len(rounds_in(a.dir, 'plain'))} round(s) interleaved, medians of the steps after "
          f"{a.warmup}; {gpu_ops:.0f} GPU ops per step (kernels, copies, memsets of the profiled "
          f"steps)")
    print(f"plain step {median(plain):.3f} ms (median of {len(plain)})")
    print(f"{'level':<14} {'prof. ms':>9} {'unprof.':>9} {'prof/plain':>10} {'us/GPU op':>9} "
          f"{'unprof/plain [95 % CI]':>26} {'API/op':>7} {'linked':>7} {'dropped':>7}")
    lines, tops = [], []
    for level, (prof, unprof, notes) in runs.items():
        row, level_lines = overhead_row(level, plain, gpu_ops, prof, unprof, notes)
        print(row)
        lines += [l.format(model=a.model) for l in level_lines]
        top = api_top(level, notes)
        if top:
            tops.append(top)
    print("\n".join(tops + [""] + lines))
    return 0


def runs(args):
    p = argparse.ArgumentParser(prog="figures.py runs")
    p.add_argument("dir")
    p.add_argument("--gpu", required=True)
    p.add_argument("--date", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rehearsal", action="store_true")
    a = p.parse_args(args)
    d = a.dir
    rounds = sorted({int(m.group(1)) for f in os.listdir(d)
                     for m in [re.search(r"_round(\d+)\.jsonl$", f)] if m})
    lines, table = [], []
    if a.rehearsal:
        table.append("REHEARSAL on CPU devices with small shapes: no figure here is a GPU figure.")
    table.append(f"bench on {a.gpu}, {a.date}: {len(rounds)} rounds, each PyTorch then ours plain "
                 f"then ours profiled (every step); medians of the steps after {a.warmup} warm-up "
                 f"steps, bootstrap 95 % intervals (2000 resamples)")
    table.append(f"{'model':<12} {'n plain':>7} {'n prof':>7} {'plain ms':>9} {'prof ms':>9} "
                 f"{'prof/plain':>10} {'95 % CI':>17} {'pytorch ms':>10} {'ours/pt':>8}")
    for model in MODELS:
        plain = [t for r in rounds for t in
                 step_times(os.path.join(d, f"{model}_plain_round{r}.jsonl"), a.warmup)]
        prof = [t for r in rounds for t in
                step_times(os.path.join(d, f"{model}_profiled_round{r}.jsonl"), a.warmup)]
        torch = []
        for r in rounds:
            path = os.path.join(d, f"torch_round{r}.json")
            if os.path.exists(path):
                with open(path) as f:
                    torch += json.load(f).get("step_ms", {}).get(model, [])
        ratio, lo, hi = bootstrap_ratio(prof, plain)
        over_pt = median(plain) / median(torch) if torch else NAN
        table.append(f"{model:<12} {len(plain):7d} {len(prof):7d} {median(plain):9.3f} "
                     f"{median(prof):9.3f} {ratio:10.4f} [{lo:7.4f}, {hi:7.4f}] "
                     f"{median(torch):10.3f} {over_pt:8.3f}")
        lines.append(f"profiled_over_plain {model} {ratio:.4f} {lo:.4f} {hi:.4f}")
        lines.append(f"step_over_pytorch {model} {over_pt:.4f}")
        every4 = os.path.join(d, f"{model}_every4.jsonl")
        unprofiled = step_times(every4, 4, keep=lambda s: s % 4 != 0)
        e_ratio, e_lo, e_hi = bootstrap_ratio(unprofiled, plain)
        lines.append(f"every4_unprofiled_over_plain {model} {e_ratio:.4f} {e_lo:.4f} {e_hi:.4f}")
        notes = [n for r in rounds
                 for n in trace_notes(os.path.join(d, f"{model}_profiled_round{r}.txt"))]
        ops = sum(n["gpu_ops"] for n in notes)
        linked = sum(n["linked"] for n in notes)
        lines.append(f"api_records_per_gpu_op {model} "
                     f"{sum(n['api'] for n in notes) / ops if ops else NAN:.3f}")
        lines.append(f"linked_share {model} "
                     f"{linked / (linked + sum(n['unlinked'] for n in notes)) if linked else NAN:.4f}")
        lines.append(f"dropped {model} {sum(n['dropped'] for n in notes) if notes else 'nan'}")
        trace = os.path.join(d, f"{model}_trace.pb")
        if os.path.exists(trace):
            lines.append(f"trace_bytes_per_step {model} {os.path.getsize(trace)}")
    text = "\n".join(table + [""] + lines) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out + ".tmp", "w") as f:
        f.write(text)
    os.replace(a.out + ".tmp", a.out)
    print(text, end="")
    return 0


def main(argv):
    command, args = argv[0], argv[1:]
    return {"losses": losses, "smoke": smoke, "overhead": overhead, "runs": runs}[command](args)


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
