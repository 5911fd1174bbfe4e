"""`make` installs CPU torch from PyTorch's CPU index when that index answers, and from pip's own
configured sources (a local mirror, no internet) when it does not."""
from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _torch_install_line(tmp_path: Path, index: str) -> str:
    out = subprocess.run(["make", "-n", "-B", "install", f"VENV={tmp_path / 'venv'}", f"TORCH_INDEX={index}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=True).stdout
    return next(line for line in out.splitlines() if "pip install -q torch==" in line)


def test_cpu_index_is_used_only_when_it_answers(tmp_path):
    (tmp_path / "index" / "torch").mkdir(parents=True)
    (tmp_path / "index" / "torch" / "index.html").write_text("<html></html>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path / "index"), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    index = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        line = _torch_install_line(tmp_path, index)
    finally:
        server.shutdown()
        server.server_close()
    assert line.split()[-3:] == ["torch==2.13.0", "--index-url", index]
    dead = _torch_install_line(tmp_path, index)  # the same address, nothing listening now
    assert dead.split()[-1] == "torch==2.13.0" and "--index-url" not in dead
