"""The research notebook executes end to end (small sizes through its env variables)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "compare_indexes.ipynb"

pytestmark = pytest.mark.spark  # the kernel starts its own Spark session


def test_notebook_runs_and_leaves_no_temporary_directory(tmp_path, monkeypatch):
    """Without INDEXBENCH_NB_OUT the run goes to a temporary directory, which the last
    cell removes (it held ~86 MB at the default sizes)."""
    monkeypatch.setenv("INDEXBENCH_NB_SIZES", "1000,1,300")
    monkeypatch.setenv("INDEXBENCH_NB_INDEXES", "bloom,simple-bucket")
    monkeypatch.setenv("INDEXBENCH_NB_MASTER", "local[2]")
    monkeypatch.delenv("INDEXBENCH_NB_OUT", raising=False)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the kernel's tempfile.mkdtemp goes here
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    assert "report/index.html" in text and "removed " in text  # written, then cleaned up
    assert list(temp.glob("indexbench-nb-*")) == []
    images = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                 if "image/png" in o.get("data", {}))
    assert images >= 5  # fp rate, files read, latency, bucket sizes, index bytes
