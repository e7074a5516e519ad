"""Runs the lit/FileCheck suite, so that one `pytest` command runs every test.

With `UOPC_LIT_LOG=PATH` set, lit's verbose report is also written to PATH: .ci/run reads
lit's own counts from it rather than running the suite a second time.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

FILECHECK_DIR = Path(__file__).resolve().parents[1] / "filecheck"


def test_filecheck_suite():
    lit = shutil.which("lit") or shutil.which("lit", path=os.path.dirname(sys.executable))
    assert lit, "lit is not installed: pip install -e '.[test]'"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run([lit, "-v", str(FILECHECK_DIR)], capture_output=True, text=True, env=env)
    if os.environ.get("UOPC_LIT_LOG"):
        Path(os.environ["UOPC_LIT_LOG"]).write_text(proc.stdout + proc.stderr)
    failed = [line for line in proc.stdout.splitlines() if line.startswith(("FAIL", "XPASS", "UNRESOLVED"))]
    assert proc.returncode == 0, "\n".join(failed) + "\n" + proc.stdout[-6000:] + proc.stderr[-2000:]
