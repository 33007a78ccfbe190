"""Every analysis function against the CLI: on every test trace (each format, directories of
ranks and steps, the samples), `stepscope.CMD(trace)` equals `json.loads` of
`stepscope CMD TRACE --json` run as a separate process, and a command that fails fails the same
way (StepscopeError with the CLI's message and exit code)."""

import json
import os
import subprocess

import pytest

import stepscope
from conftest import DATA, RANKS, SAMPLES, ROOT

# diff and merge need more than one input; they are checked below on pairs.
SINGLE = sorted(name for name in stepscope.analyses() if name not in ("diff",))


# Files next to the traces that are not traces: expected outputs, TensorFlow's allocator maxima.
NOT_TRACES = ("/golden", ".tf_allocator_maximums.json", ".in_use.json")


def fixtures():
    """Every trace file under tests/data and samples/ (as the resolver lists them), and the
    directories that hold a run's ranks or steps."""
    found = []
    for folder, _, _ in sorted(os.walk(DATA)):
        if folder.endswith(NOT_TRACES[0]):
            continue
        try:
            what, inputs = stepscope._stepscope.resolve(folder)
        except stepscope.StepscopeError:
            continue  # no trace in it
        found += inputs if what == "files" else [folder]
    _, samples = stepscope._stepscope.resolve(str(SAMPLES))
    found += samples
    found += [str(RANKS), str(DATA / "trainer" / "lstm_run_steps")]
    return sorted(p for p in set(found) if not p.endswith(NOT_TRACES[1:]))


def cli_json(cli_path, args):
    run = subprocess.run([cli_path, *args, "--json"], capture_output=True, text=True)
    return run.returncode, (json.loads(run.stdout) if run.returncode == 0 else run.stderr.strip())


def check(cli_path, command, inputs, py_inputs, **options):
    flags = [f"--{k.replace('_', '-')}" if v is True else f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    code, expected = cli_json(cli_path, [command.replace("_", "-"), *inputs, *flags])
    function = getattr(stepscope, command)
    if code == 0:
        assert function(*py_inputs, **options) == expected, f"{command} {inputs}"
    else:
        with pytest.raises(stepscope.StepscopeError) as error:
            function(*py_inputs, **options)
        assert error.value.exit_code == code
        assert expected.splitlines()[0].endswith(error.value.message)


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: os.path.relpath(p, ROOT))
def test_every_analysis_equals_the_cli_json(cli_path, path):
    try:
        loaded = stepscope.load(path)
    except stepscope.StepscopeError:
        loaded = path  # not a trace (a README): the commands must fail as the CLI's do
    py_inputs = [loaded]
    for command in SINGLE:
        check(cli_path, command, [path], py_inputs)


def test_paths_and_options_are_passed_as_the_cli_takes_them(cli_path):
    alexnet = str(DATA / "pytorch_kineto_alexnet_train.json.gz")
    check(cli_path, "kernels", [alexnet], [alexnet], top=3)
    check(cli_path, "call_tree", [alexnet], [alexnet], bottom_up=True, depth=2)
    check(cli_path, "idle", [alexnet], [alexnet], rule="hta")
    check(cli_path, "launches", [alexnet], [alexnet], all=True)


def test_diff_of_two_ranks_and_of_sides(cli_path):
    rank0, rank1 = (str(RANKS / name) for name in ("rank0.pbtxt", "rank1.pbtxt"))
    check(cli_path, "diff", [rank0, rank1], [rank0, rank1])
    a, b = stepscope.load(rank0), stepscope.load(rank1)
    code, expected = cli_json(cli_path, ["diff", rank0, "--vs", rank1])
    assert code == 0 and stepscope.diff(a, vs=b) == expected
    steps = sorted(str(p) for p in (DATA / "trainer" / "lstm_run_steps").glob("*.pb.gz"))
    code, expected = cli_json(cli_path, ["diff", *steps[:2], "--vs", *steps[2:]])
    assert stepscope.diff(steps[:2], vs=steps[2:]) == expected


def test_reports_become_dataframes():
    report = stepscope.kernels(DATA / "pytorch_kineto_alexnet_train.json.gz")
    assert "kernels" in report.tables()
    frame = report.to_pandas("kernels")
    assert len(frame) == len(report["kernels"])
    assert frame["total_ns"].sum() == report["total_ns"]
