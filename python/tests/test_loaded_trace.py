"""The analyses of a loaded Trace: they analyse the trace as loaded, without reading its file
again (equal to the CLI's --json on the file, also once the file is gone), a Trace loaded from a
relative path still works after os.chdir, and the slices as a polars frame."""

import gzip
import json
import os
import shutil
import subprocess

import pytest

import stepscope
from conftest import ALEXNET, RANKS

# Analyses of one trace that the CLI runs on the trace read (every one of `report`'s).
ON_THE_TRACE = ["summary", "ops", "kernels", "memory", "memcpy", "streams", "call_tree", "step_breakdown", "steps",
                "gpu", "idle", "launches", "annotations", "kernel_patterns", "overlap", "critical_path",
                "efficiency", "collectives"]


def cli_json(cli_path, *args, cwd=None):
    run = subprocess.run([cli_path, *map(str, args), "--json"], capture_output=True, text=True, cwd=cwd, check=True)
    return json.loads(run.stdout)


def test_analyses_read_the_trace_loaded_not_its_file(tmp_path, cli_path):
    path = tmp_path / "alexnet.json.gz"
    shutil.copy(ALEXNET, path)
    expected = {name: cli_json(cli_path, name.replace("_", "-"), path) for name in ON_THE_TRACE}
    expected_hta = cli_json(cli_path, "idle", path, "--rule", "hta", "--top", 3)
    trace = stepscope.load(path)
    path.unlink()  # an analysis that read the file again would fail now
    for name in ON_THE_TRACE:
        assert getattr(stepscope, name)(trace) == expected[name], name
    assert stepscope.idle(trace, rule="hta", top=3) == expected_hta


def test_a_trace_read_cut_short_is_analysed_as_the_cli_does(tmp_path, cli_path):
    cut = tmp_path / "cut.json"
    text = gzip.open(ALEXNET, "rt").read()
    cut.write_text(text[: len(text) // 2])
    trace = stepscope.load(cut, allow_truncated=True)
    assert stepscope.ops(trace, allow_truncated=True) == cli_json(cli_path, "ops", cut, "--allow-truncated")
    # Without --allow-truncated the CLI refuses the file, and so does the analysis.
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.ops(trace)
    assert error.value.exit_code == 2


def test_a_relative_path_still_works_after_chdir(tmp_path, monkeypatch, cli_path):
    (tmp_path / "run").mkdir()
    shutil.copy(ALEXNET, tmp_path / "run" / "alexnet.json.gz")
    shutil.copytree(RANKS, tmp_path / "ranks")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    trace = stepscope.load("run/alexnet.json.gz")
    ranks = stepscope.load("ranks")
    assert trace.input == str(tmp_path / "run" / "alexnet.json.gz")
    assert ranks.input == str(tmp_path / "ranks")
    expected = cli_json(cli_path, "kernels", "run/alexnet.json.gz", cwd=tmp_path)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert stepscope.kernels(trace) == expected
    # Commands that read the input again (several traces; --rank) read it by its absolute path.
    assert stepscope.gpu(ranks) == cli_json(cli_path, "gpu", tmp_path / "ranks")
    assert stepscope.gpu(ranks[0], rank=0) == cli_json(cli_path, "gpu", tmp_path / "ranks" / "rank0.pbtxt", "--rank", 0)


def test_slices_to_polars():
    pl = pytest.importorskip("polars", reason="polars is not installed (pip install polars)")
    trace = stepscope.load(ALEXNET)
    frame = trace.to_polars()
    pandas_frame = trace.to_pandas()
    assert isinstance(frame, pl.DataFrame)
    assert frame.height == trace.slice_count
    assert frame.columns == list(pandas_frame.columns)
    assert isinstance(frame.schema["name"], pl.Enum)
    assert frame["name"].to_list() == pandas_frame["name"].astype(str).tolist()
    assert frame["dur_ns"].to_list() == pandas_frame["dur_ns"].tolist()
    kernels = frame.filter(pl.col("kind") == "kernel")
    assert kernels.height == int((pandas_frame["kind"] == "kernel").sum()) > 0
