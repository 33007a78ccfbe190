"""stepscope in Python: read any trace the CLI reads, get its tables as numpy arrays (and
DataFrames), and run every analysis of the CLI with the same numbers as its --json.

    import stepscope
    trace = stepscope.load("pytorch_kineto_alexnet_train.json.gz")
    trace.to_pandas()                    # one row per slice, names as categoricals
    stepscope.kernels(trace, top=5)      # == stepscope kernels TRACE --json --top 5
"""

import os

from . import _stepscope
from ._analyses import Report, analyses, run
from ._errors import StepscopeError
from ._trace import SLICE_KINDS, TRACK_KINDS, Trace, TraceList

_stepscope._set_error_type(StepscopeError)

__version__ = _stepscope.version

# summary, ops, kernels, memory, ..., stragglers: one function per analysis command of the CLI.
globals().update(analyses())


def load(path, *, progress=None, allow_truncated=False, preview_bytes=0):
    """Reads a trace the way the CLI does (formats told from the content, .gz transparently).

    ``path``: a trace file, or a directory: a profiler run read as one trace (XSpace's
    ``plugins/profile/<run>/``) gives one Trace, a directory of trace files (ranks, steps) a
    list of them in natural order; a glob too. The GIL is released while reading.
    ``progress(bytes_read, disk_bytes_read, disk_bytes)``, when given, is called as a big file
    streams; returning False cancels the read. ``allow_truncated``: read a file cut short up
    to its cut (``Trace.truncation`` says where). ``preview_bytes``: only the first bytes of a
    big Chrome JSON or Perfetto file. Raises StepscopeError (file, offset, exit_code) with the
    CLI's message when a file cannot be read.
    """
    path = os.fspath(path)
    what, inputs = _stepscope.resolve(path)
    traces = [Trace(_stepscope.load_one(i, progress, allow_truncated, preview_bytes)) for i in inputs]
    return TraceList(traces, path) if what == "files" else traces[0]


def cli(*args):
    """Runs ``stepscope ARGS...`` in-process: (exit code, stdout, stderr)."""
    return _stepscope.run_cli([os.fspath(a) for a in args])


def view(trace):
    """Opens the desktop viewer (stepscope-view, when installed) on a trace or a path."""
    import shutil
    import subprocess

    viewer = shutil.which("stepscope-view")
    if viewer is None:
        raise StepscopeError("stepscope-view is not installed (build it with the viewer on, docs/viewer.md)", 1)
    paths = [t.input if isinstance(t, Trace) else os.fspath(t) for t in (trace if isinstance(trace, list) else [trace])]
    return subprocess.Popen([viewer, *paths])


def synthetic(slices, seed=1):
    """A generated trace of ``slices`` slices (as ``stepscope-view --synthetic N``), for
    benchmarks; it has no input file, so the analyses, which read inputs, do not take it."""
    return Trace(_stepscope.synthetic(int(slices), seed))
