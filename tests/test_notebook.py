"""The research notebook executes end to end (small sizes through its env variables)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "compare_indexes.ipynb"

pytestmark = pytest.mark.spark  # the kernel starts its own Spark session


def test_notebook_runs_and_keeps_the_report_it_printed(tmp_path, monkeypatch):
    """Without INDEXBENCH_NB_OUT the run goes to a temporary directory whose tables the
    last cell removes (~86 MB at the default sizes); the report it printed stays."""
    monkeypatch.setenv("INDEXBENCH_NB_SIZES", "1000,1,300")
    monkeypatch.setenv("INDEXBENCH_NB_INDEXES", "bloom,simple-bucket")
    monkeypatch.setenv("INDEXBENCH_NB_MASTER", "local[2]")
    monkeypatch.setenv("INDEXBENCH_NB_ADVISE_DAYS", "5")
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
    (run,) = temp.glob("indexbench-nb-*")
    assert not (run / "tables").exists()  # the tables went
    assert (run / "report" / "index.html").is_file() and (run / "metrics.parquet").is_file()
    assert str(run / "report" / "index.html") in text  # the page printed still opens
    images = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                 if "image/png" in o.get("data", {}))
    assert images >= 5  # fp rate, files read, latency, bucket sizes, index bytes
    assert "Recommended: " in text and "Which index for a `uniform` table" in text
    assert (run / "advise" / "index.html").is_file()  # api.advise's page beside the run
