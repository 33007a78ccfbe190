"""Paths the Python module's tests share: the CLI built in the same tree (STEPSCOPE_CLI) and the
repository's test traces (ctest sets both; run by hand, they default to the cpu-only build)."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("STEPSCOPE_TEST_DATA", ROOT / "tests" / "data"))
SAMPLES = pathlib.Path(os.environ.get("STEPSCOPE_SAMPLES", ROOT / "samples"))
CLI = os.environ.get("STEPSCOPE_CLI", str(ROOT / "build" / "cpu-only" / "profiler" / "cli" / "stepscope"))

ALEXNET = DATA / "pytorch_kineto_alexnet_train.json.gz"
RANKS = DATA / "analysis" / "ranks"


@pytest.fixture(scope="session")
def cli_path():
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"no stepscope CLI at {CLI} (set STEPSCOPE_CLI)")
    return CLI
