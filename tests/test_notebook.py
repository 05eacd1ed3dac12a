"""The research notebook executes end to end (small sizes through its env variables)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "compare_indexes.ipynb"

pytestmark = pytest.mark.spark  # the kernel starts its own Spark session


def test_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("INDEXBENCH_NB_SIZES", "1000,1,300")
    monkeypatch.setenv("INDEXBENCH_NB_INDEXES", "bloom,simple-bucket")
    monkeypatch.setenv("INDEXBENCH_NB_MASTER", "local[2]")
    monkeypatch.setenv("INDEXBENCH_NB_OUT", str(tmp_path / "run"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert (tmp_path / "run" / "report" / "index.html").exists()
    images = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                 if "image/png" in o.get("data", {}))
    assert images >= 5  # fp rate, files read, latency, bucket sizes, index bytes
