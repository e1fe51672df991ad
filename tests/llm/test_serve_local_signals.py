"""``agentcausal serve-local`` stops cleanly (exit 0) on Ctrl-C or SIGTERM whenever it comes.

The server is a stand-in whose ``base_url`` sends the signal once while the banner
prints, the moment a ``try`` around the wait loop alone misses. It runs in a child
interpreter so that an unhandled SIGTERM cannot end the test session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import os, signal, sys
from agentcausal_cli import main
from agentcausal.llm import local

class SignalDuringBanner:
    api_key = "k"
    sent = stopped = False

    @property
    def base_url(self):
        if not self.sent:
            self.sent = True
            os.kill(os.getpid(), int(sys.argv[1]))
        return "http://127.0.0.1:9/v1"

    def stop(self):
        self.stopped = True

srv = SignalDuringBanner()
local.start_server = lambda *a, **k: srv
before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
rc = main(["serve-local", "--gguf", sys.argv[2]])
print("rc", rc, "stopped", srv.stopped, "restored", before == [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)])
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_while_the_banner_prints_stops_cleanly(sig, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(int(sig)), str(tmp_path / "m.gguf")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "rc 0 stopped True restored True", r.stdout + r.stderr[-2000:]
    assert lines[-2] == "stopped"
