#!/usr/bin/env python3
"""Executes notebooks top to bottom in a fresh Python kernel, as a reader running them would
(nbclient; the kernel talks to this process over Unix sockets, nothing else is reached): exits 1
when a cell raises, when a notebook is stored with outputs (they are committed cleared, so that
the repository holds no stale figures), or when one runs past its time limit.

    run_notebooks.py [NOTEBOOK.ipynb...]   (default: every notebook beside this script)

The kernel sees this process's environment: PYTHONPATH must let it `import stepscope` (relative
entries are made absolute, as the kernel runs in the notebook's folder).
"""
import argparse
import os
import pathlib
import shutil
import sys
import tempfile
import time

try:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from jupyter_client.manager import KernelManager
except ImportError as e:
    sys.exit(f"run_notebooks: {e}: needs nbclient, nbformat and ipykernel (python/requirements.txt; "
             "scripts/install-deps.sh installs them)")


def stored_outputs(nb):
    """The code cells stored with outputs or an execution count."""
    return [i for i, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count"))]


def run(path, cell_timeout, total_limit):
    """Executes one notebook; returns what went wrong ("" when nothing did)."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    stored = stored_outputs(nb)
    if stored:
        return f"cells {stored} are stored with outputs: clear them before committing"
    # The kernel over Unix sockets (ipc), not TCP on the loopback: no port is opened.
    # Their paths absolute: the kernel runs in the notebook's folder, this process elsewhere.
    sockets = tempfile.mkdtemp(prefix="notebook-kernel-")
    kernel = KernelManager(kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"), transport="ipc",
                           ip=os.path.join(sockets, "kernel"))
    client = NotebookClient(nb, km=kernel, timeout=cell_timeout, resources={"metadata": {"path": str(path.parent)}})
    began = time.monotonic()
    try:
        client.execute()
    except CellExecutionError as e:
        return f"a cell failed:\n{e}"
    except (CellTimeoutError, DeadKernelError, RuntimeError) as e:
        return f"{type(e).__name__}: {e}"
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    took = time.monotonic() - began
    cells = sum(cell.cell_type == "code" for cell in nb.cells)
    shown = sum(bool(cell.get("outputs")) for cell in nb.cells if cell.cell_type == "code")
    print(f"{path.name}: {cells} code cells ran, {shown} with output, {took:.1f} s")
    if shown < cells:
        silent = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and not cell.get("outputs")]
        print(f"  (cells {silent} show nothing)")
    if took > total_limit:
        return f"took {took:.1f} s, over its {total_limit} s"
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path)
    parser.add_argument("--cell-timeout", type=int, default=120, help="seconds a cell may run")
    parser.add_argument("--limit", type=float, default=60, help="seconds a whole notebook may run")
    args = parser.parse_args()
    # The kernel runs in each notebook's folder: a PYTHONPATH relative to here must stay valid there.
    if os.environ.get("PYTHONPATH"):
        os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p)
    notebooks = args.notebooks or sorted(pathlib.Path(__file__).resolve().parent.glob("*.ipynb"))
    if not notebooks:
        sys.exit("run_notebooks: no notebook to run")
    failed = 0
    for path in notebooks:
        problem = run(path.resolve(), args.cell_timeout, args.limit)
        if problem:
            print(f"FAIL {path}: {problem}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
