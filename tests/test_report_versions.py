"""The versions that shape the numbers reach the report, and runs made with different ones
are flagged (nothing installed: two run folders written by hand)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from metrics.contract import write_metrics
from reports.data import shaping_versions, version_warning
from reports.page import write_report

ROOT = Path(__file__).resolve().parents[1]


def _run(folder: Path, pyarrow: str, hudi: str | None = None) -> Path:
    rows = [{"run_id": "r", "index": "simple-bucket", "workload": "uniform", "batch": b,
             "operation": "upsert", "records": 10, "inserts": 10, "updates": 0,
             "tag_s": 0.1, "write_s": 0.2, "commit_s": 0.01, "total_s": 0.4}
            for b in (0, 1)]
    write_metrics(folder, rows)
    run = {"run_id": "r", "command": "compare",
           "versions": {"pyspark": "4.1.4", "pyarrow": pyarrow}}
    if hudi:
        run["peers"] = {"hudi-simple-bucket": {"peer": "hudi", "hudi": hudi}}
    (folder / "run.json").write_text(json.dumps(run))
    return folder


def test_the_report_names_the_versions_and_flags_a_difference(tmp_path):
    a = _run(tmp_path / "a", "19.0.1", hudi="1.2.0")
    b = _run(tmp_path / "b", "26.0.1")
    assert shaping_versions(json.loads((a / "run.json").read_text())) == {
        "pyspark": "4.1.4", "pyarrow": "19.0.1", "hudi": "1.2.0"}
    warning = version_warning({"a": json.loads((a / "run.json").read_text()),
                               "b": json.loads((b / "run.json").read_text())})
    assert warning is not None and "pyarrow (a 19.0.1, b 26.0.1)" in warning
    assert "hudi" in warning and "pyspark" not in warning
    page = write_report([a, b], out=tmp_path / "report").read_text()
    assert "pyarrow 19.0.1" in page and "pyarrow 26.0.1" in page and "hudi 1.2.0" in page
    assert "warning:" in page
    assert version_warning({"a": json.loads((a / "run.json").read_text())}) is None


def test_report_command_warns_on_stderr(tmp_path):
    a = _run(tmp_path / "a", "19.0.1")
    b = _run(tmp_path / "b", "26.0.1")
    done = subprocess.run([sys.executable, "-m", "indexbench", "report", str(a), str(b),
                           "--out", str(tmp_path / "r")], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("warning: runs made with different")
    assert "report:" in done.stdout
