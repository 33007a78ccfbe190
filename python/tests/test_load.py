"""stepscope.load and the Trace's tables, checked against the trace files themselves (parsed
here with the standard library) and against the CLI."""

import gzip
import json
import os
import shutil
import subprocess
import threading
import time
from collections import Counter

import numpy as np
import pytest

import stepscope
from conftest import ALEXNET, DATA, RANKS, SAMPLES


def raw_events(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def test_alexnet_slices_match_the_file():
    trace = stepscope.load(ALEXNET)
    assert isinstance(trace, stepscope.Trace)
    assert trace.format == "Chrome trace JSON"  # as summary --json names it
    kernels_in_file = [e for e in raw_events(ALEXNET) if e.get("ph") == "X" and e.get("cat") == "kernel"]
    frame = trace.to_pandas()
    kernels = frame[(frame["kind"] == "kernel") & ((frame["flags"] & 1) == 0)]
    assert len(kernels) == len(kernels_in_file)
    # Kineto writes microseconds (with fractions): the model keeps ns.
    assert kernels["dur_ns"].sum() == round(sum(e["dur"] for e in kernels_in_file) * 1000)
    by_name = Counter(e["name"] for e in kernels_in_file)
    counts = kernels["name"].value_counts()
    assert counts[counts > 0].to_dict() == dict(by_name)


def test_slice_columns_agree_with_the_kernels_analysis():
    trace = stepscope.load(ALEXNET)
    s = trace.slices
    kinds = stepscope._trace.SLICE_KINDS
    mask = (s["kind"] == kinds.index("kernel")) & ((s["flags"] & 1) == 0)
    report = stepscope.kernels(trace)
    assert int(mask.sum()) == report["launches"]
    assert int(s["dur_ns"][mask].sum()) == report["total_ns"]
    first = report["kernels"][0]
    names = np.array(trace.strings, dtype=object)[s["name"][mask]]
    assert int((names == first["name"]).sum()) == first["launches"]


def test_names_are_categoricals_over_the_string_table():
    trace = stepscope.load(ALEXNET)
    frame = trace.to_pandas()
    assert str(frame["name"].dtype) == "category"
    assert str(frame["op_type"].dtype) == "category"
    assert str(frame["track_path"].dtype) == "category"
    assert len(frame) == trace.slice_count
    # The codes are the trace's own string ids: no string per slice was made.
    assert np.array_equal(frame["name"].cat.codes.to_numpy(), trace.slices["name"].astype("int32"))


def test_plain_tables_are_views_not_copies():
    trace = stepscope.load(ALEXNET)
    flows = trace.flows
    assert len(flows["from_slice"]) > 0
    # from_slice is a strided view into the trace's 8-byte flows; to_slice is unpacked.
    assert flows["from_slice"].strides == (8,)
    assert not flows["from_slice"].flags.owndata and not flows["from_slice"].flags.writeable
    assert np.all(flows["from_slice"] < trace.slice_count) and np.all(flows["to_slice"] < trace.slice_count)
    transfers = trace.transfers
    assert transfers["bytes"].strides == (32,) and not transfers["bytes"].flags.owndata
    # A view outlives the Trace object that made it.
    view = trace.transfers["bytes"]
    total = int(view.sum())
    del trace, transfers, flows
    assert int(view.sum()) == total


def test_counters_are_views_of_the_series():
    trace = stepscope.load(SAMPLES / "h100_resnet50_b32_step3.pb.gz")
    counters = trace.counters
    assert counters, "the ResNet step records allocator memory"
    for series in counters:
        assert len(series["ts_ns"]) == len(series["values"])
        assert not series["values"].flags.owndata
        assert np.all(np.diff(series["ts_ns"]) >= 0)
    frame = trace.to_pandas("counters")
    assert len(frame) == sum(len(s["values"]) for s in counters)


def test_memory_tables_match_the_memory_analysis():
    # A StepStats step: the per-op memory is decoded from the payload.
    trace = stepscope.load(SAMPLES / "h100_resnet50_b32_step3.pb.gz")
    outputs = trace.to_pandas("outputs")
    allocators = trace.to_pandas("allocators")
    assert len(outputs) > 0 and len(allocators) > 0
    assert str(outputs["allocator"].dtype) == "category"
    report = stepscope.memory(trace)
    # What the ops recorded of each allocator, recounted here, is what the report says of it.
    by_allocator = allocators.groupby("allocator", observed=True)
    in_use = by_allocator["bytes_in_use"].max().to_dict()
    op_peak = by_allocator["peak_bytes"].max().to_dict()
    checked = 0
    for entry in report["allocators"]:
        if entry["allocator"] in in_use:
            assert entry["max_allocator_bytes_in_use"] == in_use[entry["allocator"]]
            assert entry["max_op_peak_bytes"] == op_peak[entry["allocator"]]
            checked += 1
    assert checked > 0


def test_directory_of_ranks_is_a_list_in_natural_order():
    traces = stepscope.load(RANKS)
    assert isinstance(traces, list) and len(traces) == 2
    assert [os.path.basename(t.input) for t in traces] == ["rank0.pbtxt", "rank1.pbtxt"]
    assert [t.rank for t in traces] == [0, 1] or all(t.rank is None for t in traces)


def test_bad_input_raises_with_file_offset_and_exit_code(tmp_path, cli_path):
    cut = tmp_path / "cut.json"
    text = gzip.open(ALEXNET, "rt").read()
    cut.write_text(text[: len(text) // 3])
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.load(cut)
    assert error.value.file == str(cut)
    assert error.value.exit_code == 2
    assert error.value.offset is not None and 0 < error.value.offset <= len(text) // 3
    cli = subprocess.run([cli_path, "summary", str(cut)], capture_output=True, text=True)
    assert cli.returncode == error.value.exit_code
    assert cli.stderr.strip() == f"stepscope summary: {error.value.message}"
    # Read up to the cut when asked.
    trace = stepscope.load(cut, allow_truncated=True)
    assert trace.slice_count > 0
    assert trace.truncation["file"] == str(cut) and trace.truncation["offset"] <= len(text) // 3
    code, out, _ = stepscope.cli("summary", cut, "--json", "--allow-truncated")
    assert code == 0 and json.loads(out)["truncated"] == [trace.truncation]
    with pytest.raises(stepscope.StepscopeError) as missing:
        stepscope.load(tmp_path / "missing.json")
    assert missing.value.exit_code == 2


def test_analysis_errors_are_the_clis(tmp_path):
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.kernels(tmp_path / "missing.pb")
    assert error.value.exit_code == 2 and "missing.pb" in error.value.message
    with pytest.raises(TypeError):
        stepscope.kernels(ALEXNET, no_such_flag=1)


def test_load_releases_the_gil_and_reports_progress(tmp_path):
    # A bigger file: the AlexNet events repeated, so that reading takes a while.
    events = raw_events(ALEXNET)
    big = tmp_path / "big.json"
    with open(big, "w") as f:
        json.dump({"traceEvents": events * 150}, f)
    seen = []
    done = threading.Event()
    result = {}

    def read():
        result["trace"] = stepscope.load(big, progress=lambda read, disk, size: seen.append(read))
        done.set()

    reader = threading.Thread(target=read)
    ticks = 0
    reader.start()
    while not done.is_set():
        ticks += 1  # runs only while the reader does not hold the GIL
        time.sleep(0)
    reader.join()
    assert ticks > 10
    assert seen and seen == sorted(seen)
    assert result["trace"].slice_count >= 150 * 700
    # Returning False cancels.
    with pytest.raises(stepscope.StepscopeError):
        stepscope.load(big, progress=lambda *_: False)
