"""The CLI's analyses as functions: ``stepscope.kernels(trace, top=5)`` returns what
``stepscope kernels TRACE --json --top 5`` prints, as a dict (the same document: the same
command runs in-process, on the Trace already loaded where it is one), with tables convertible
to DataFrames."""

import json
import os

from . import _stepscope
from ._errors import StepscopeError
from ._trace import Trace, TraceList

# Commands that write files (a converted trace, an HTML report) or only list formats are not
# analyses; `merge` is one (its --json says what it merged).
_NOT_ANALYSES = {"convert", "formats", "report"}


class Report(dict):
    """A command's --json document, as a dict (equal to ``json.loads`` of the CLI's output)."""

    def tables(self, doc=None, prefix=""):
        """The paths of the lists of records in the document, e.g. ["kernels", "traces.0.ops"]."""
        doc = self if doc is None else doc
        found = []
        for key, value in doc.items():
            path = f"{prefix}{key}"
            if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
                found.append(path)
                for i, row in enumerate(value):
                    found += self.tables(row, f"{path}.{i}.")
            elif isinstance(value, dict):
                found += self.tables(value, f"{path}.")
        return found

    def to_pandas(self, table=None):
        """A table of the document as a DataFrame (``table`` a path from tables(); the first one
        when not given). Nested objects become dotted columns."""
        import pandas as pd

        tables = self.tables()
        if not tables:
            raise ValueError(f"{self.get('schema')}: no table in this report")
        path = table or tables[0]
        value = self
        for part in path.split("."):
            value = value[int(part)] if isinstance(value, list) else value[part]
        return pd.json_normalize(value)


def _inputs(traces):
    """The paths the CLI is given for the traces: a Trace's input, a path as is, lists flattened."""
    paths = []
    for item in traces:
        if isinstance(item, (Trace, TraceList)):
            paths.append(item.input)
        elif isinstance(item, (str, os.PathLike)):
            paths.append(os.fspath(item))
        elif isinstance(item, (list, tuple)):
            paths += _inputs(item)
        else:
            raise TypeError(f"expected a stepscope.Trace, a path or a list of them, got {type(item).__name__}")
    return paths


def _flag_args(name, flags, options):
    """Keyword arguments as the command's flags: top=5 -> --top 5, bottom_up=True -> --bottom-up;
    False and None leave a flag out."""
    args = []
    for key, value in options.items():
        flag = key.replace("_", "-")
        if flag not in flags:
            raise TypeError(f"stepscope.{name.replace('-', '_')}() has no option {key!r} "
                            f"(flags: {', '.join(sorted(flags))})")
        if value is None or value is False:
            continue
        if flags[flag]:
            args += [f"--{flag}", str(value)]
        elif value is True:
            args.append(f"--{flag}")
        else:
            raise TypeError(f"option {key!r} is a switch: True or False")
    return args


def run(command, *traces, vs=None, **options):
    """Runs ``stepscope COMMAND TRACES... --json`` in-process and returns its document as a
    Report. ``vs``: the B side of a diff (``diff(a, vs=b)``). Raises StepscopeError with the
    CLI's message and exit code when the command fails.

    Given one loaded Trace, the command analyses it as loaded, without reading its file again;
    given paths, several traces (a TraceList: the commands on one trace merge them, which takes
    the traces), ``vs`` or ``rank``, it reads the inputs as the CLI does."""
    spec = _commands().get(command)
    if spec is None:
        raise ValueError(f"no stepscope command {command!r}")
    args = [command] + _inputs(traces)
    if vs is not None:
        args += ["--vs"] + _inputs([vs])
    args += _flag_args(command, spec["flags"], options)
    if "json" in spec["flags"]:
        args.append("--json")
    result = None
    if len(traces) == 1 and type(traces[0]) is Trace and vs is None:
        result = _stepscope.analyse_loaded(args, traces[0]._core)
    code, out, err = result if result is not None else _stepscope.run_cli(args)
    if code != 0:
        message = err.strip().splitlines()[0] if err.strip() else f"exit code {code}"
        prefix = f"stepscope {command}: "
        message = message[len(prefix):] if message.startswith(prefix) else message
        file = next((p for p in args[1:] if message.startswith(p + ":")), None)
        raise StepscopeError(message, code, file)
    if "json" not in spec["flags"]:
        return out
    doc = json.loads(out)
    # summary of several inputs writes a list of documents, one per input.
    return [Report(d) for d in doc] if isinstance(doc, list) else Report(doc)


_COMMANDS = None


def _commands():
    global _COMMANDS
    if _COMMANDS is None:
        _COMMANDS = {
            name: {"synopsis": synopsis, "help": help_text, "flags": dict(flags)}
            for name, synopsis, help_text, reads_traces, flags in _stepscope.commands()
            if reads_traces and name not in _NOT_ANALYSES
        }
    return _COMMANDS


def _make(command):
    def analysis(*traces, **options):
        return run(command, *traces, **options)

    analysis.__name__ = analysis.__qualname__ = command.replace("-", "_")
    spec = _commands()[command]
    analysis.__doc__ = (f"stepscope {command} as a function: the document `--json` prints, as a Report.\n"
                        f"Inputs: stepscope.Trace objects or paths; flags as keyword arguments "
                        f"(--top N: top=N).\n\n{spec['help']}")
    return analysis


def analyses():
    """Every analysis command of the CLI, as {python_name: function}."""
    return {name.replace("-", "_"): _make(name) for name in _commands()}
