"""Trace: a read trace and its tables as numpy arrays, and as pandas or polars frames."""

import os

from . import _stepscope

SLICE_KINDS = list(_stepscope.slice_kinds)
TRACK_KINDS = list(_stepscope.track_kinds)


class TraceList(list):
    """The traces of a directory of trace files (ranks, steps), in natural order; ``input`` is
    the directory (made absolute when loaded), which is what the analyses are given (as the CLI
    would be)."""

    def __init__(self, traces, input):
        super().__init__(traces)
        self.input = os.path.abspath(input)


class Trace:
    """One trace read by :func:`stepscope.load`.

    The tables are dicts of read-only numpy columns: ``slices``, ``tracks``, ``flows``,
    ``counters`` (a list, one dict per series), ``transfers`` (copy sizes), ``kernel_launches``
    and ``memory`` (tensor outputs, allocator figures, op memory). Columns of plain records are
    views into the trace (no copy); the packed slice fields are unpacked once and cached. Times
    are ns relative to ``epoch_ns``; name columns hold ids into ``strings``.
    """

    def __init__(self, core):
        self._core = core
        self._cache = {}
        # Absolute as of loading, so that an analysis that reads the input again (on several
        # traces, --rank) still finds it after os.chdir.
        self._input = os.path.abspath(core.input) if core.input else ""

    def __repr__(self):
        return f"<stepscope.Trace {self.source!r} ({self.format}, {self.slice_count} slices)>"

    # What the trace is.
    input = property(lambda self: self._input, doc="The file or directory it was read from, absolute.")
    source = property(lambda self: self._core.source)
    format = property(lambda self: self._core.format)
    epoch_ns = property(lambda self: self._core.epoch_ns)
    span_ns = property(lambda self: self._core.span_end_ns - self._core.span_begin_ns)
    slice_count = property(lambda self: self._core.slice_count)
    step = property(lambda self: _known(self._core.step))
    rank = property(lambda self: _known(self._core.rank))
    world_size = property(lambda self: _known(self._core.world_size))
    host = property(lambda self: self._core.host)
    producer = property(lambda self: self._core.producer)
    truncation = property(lambda self: self._core.truncation(),
                          doc="What allow_truncated cut ({file, offset, gzip_cut, events_kept, reason}, "
                              "as the CLI's --json lists it), None when the file was read whole.")

    @property
    def import_stats(self):
        """What the import repaired or skipped, by name (as summary --json lists them)."""
        return self._core.import_stats()

    def _cached(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def strings(self):
        """Every string of the trace by id: the categories of the name columns."""
        return self._cached("strings", self._core.strings)

    @property
    def slices(self):
        return self._cached("slices", self._core.slice_columns)

    @property
    def tracks(self):
        return self._cached("tracks", self._core.track_columns)

    @property
    def track_paths(self):
        """Each track's path from its host down, joined with " / "."""
        return self._cached("track_paths", self._core.track_paths)

    @property
    def flows(self):
        return self._cached("flows", self._core.flow_columns)

    @property
    def counters(self):
        return self._cached("counters", self._core.counters)

    @property
    def transfers(self):
        return self._cached("transfers", self._core.transfer_columns)

    @property
    def kernel_launches(self):
        return self._cached("kernels", self._core.kernel_columns)

    @property
    def memory(self):
        """Per-op memory: {"outputs", "allocators", "op_memory"} tables and "categories" (the
        texts of their dtype and allocator codes), decoded from whatever the format keeps."""
        return self._cached("memory", self._core.memory_tables)

    # Frames.
    def to_pandas(self, table="slices"):
        """A pandas DataFrame of a table: "slices" (the default), "tracks", "flows",
        "transfers", "kernel_launches", "outputs", "allocators", "op_memory" or "counters".
        Names, op types and kinds are categoricals over the trace's tables, not a string per
        row; slices get their track's path as a categorical too."""
        import pandas as pd

        columns = self._table(table)
        frame = pd.DataFrame(columns, copy=False)
        strings = None
        for name in ("name", "op_type", "full_name"):
            if name in frame and table != "counters":
                strings = strings if strings is not None else _unique(pd.Index(self.strings))
                frame[name] = pd.Categorical.from_codes(columns[name].astype("int32"), categories=strings)
        if table in ("outputs", "allocators"):
            for name, texts in self.memory["categories"].items():
                if name in frame:
                    frame[name] = pd.Categorical.from_codes(columns[name].astype("int32"), categories=texts)
        if "kind" in frame and table in ("slices", "tracks"):
            kinds = SLICE_KINDS if table == "slices" else TRACK_KINDS
            frame["kind"] = pd.Categorical.from_codes(columns["kind"].astype("int8"), categories=kinds)
        if table == "slices":
            frame["track_path"] = pd.Categorical.from_codes(columns["track"].astype("int32"),
                                                            categories=_unique(pd.Index(self.track_paths)))
        return frame

    def to_polars(self, table="slices"):
        """The same table as to_pandas, as a polars DataFrame; its categoricals become polars
        Enums over the same categories, gathered by code (no string per row). Needs no pyarrow."""
        import pandas as pd
        import polars as pl

        frame = self.to_pandas(table)
        columns = []
        for name in frame.columns:
            column = frame[name]
            if isinstance(column.dtype, pd.CategoricalDtype):
                categories = [str(c) for c in column.cat.categories]
                codes = column.cat.codes.to_numpy()
                columns.append(pl.Series(name, categories, dtype=pl.Enum(categories)).gather(codes))
            else:
                columns.append(pl.Series(name, column.to_numpy()))
        return pl.DataFrame(columns)

    def _table(self, table):
        if table in ("outputs", "allocators", "op_memory"):
            return self.memory[table]
        if table == "counters":
            import numpy as np

            series = self.counters
            return {
                "counter": np.repeat(np.arange(len(series)), [len(s["ts_ns"]) for s in series]),
                "ts_ns": np.concatenate([s["ts_ns"] for s in series]) if series else np.zeros(0, "int64"),
                "value": np.concatenate([s["values"] for s in series]) if series else np.zeros(0, "int64"),
            }
        if table not in ("slices", "tracks", "flows", "transfers", "kernel_launches"):
            raise ValueError(f"no table {table!r}")
        return getattr(self, table)


def _known(value):
    return None if value < 0 else value


def _unique(index):
    """Categories must be unique: the string table is (interned), the track paths may not be."""
    if index.is_unique:
        return index
    # Repeated texts get a suffix so that every id keeps its own category.
    seen = {}
    texts = []
    for text in index:
        count = seen.get(text, 0)
        seen[text] = count + 1
        texts.append(text if count == 0 else f"{text} #{count + 1}")
    return texts
