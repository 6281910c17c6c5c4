"""scripts/screenshot_comment.py: the bundled example's comment fits 900 px in Chromium.

Skipped where Chromium is not installed (CI installs only Python packages).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")
def test_the_example_comment_fits_900_px_collapsed_and_open(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts/screenshot_comment.py"),
                           "--out", str(tmp_path), "--width", "900"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("comment.png", "comment-open.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        # The page is no wider than 900 px, and no table is cut off at that width.
        assert f"{tmp_path / name}: 900x" in done.stdout
    assert done.stdout.count(", 0 tables cut off") == 2
