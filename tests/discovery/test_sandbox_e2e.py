"""``discover --executor coding`` end to end with a hostile coder: the API key reaches no file."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from agentcausal.discovery.mac.sandbox import sandbox_available
from tests.discovery.conftest import mac_responder

REASON = sandbox_available()
KEY_ENV = "AGENTCAUSAL_E2E_API_KEY"

# Everything a model could try from inside to find the key, printed to stdout and raised on
# stderr, so it would reach the retry prompt, the attempts in the record and the report.
HOSTILE = f"""
import glob, os
found = [os.environ.get({KEY_ENV!r}, '')]
for path in glob.glob('/proc/*/environ'):
    try:
        found.append(open(path, 'rb').read().decode(errors='replace'))
    except OSError:
        pass
print('LEAK', found)
raise RuntimeError('LEAK ' + repr(found))
"""


def _files_containing(root: Path, needle: bytes) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink() and needle in p.read_bytes():
                hits.append(str(p))
        except OSError:
            pass
    return hits


@pytest.mark.skipif(REASON is not None, reason=f"sandbox unavailable here: {REASON}")
@pytest.mark.slow  # a Prefect flow run: 30 s to 2 min on 2 shared cores
@pytest.mark.timeout(300)
def test_hostile_coder_leaks_no_key_into_any_file(fake_server, tmp_path, monkeypatch, capsys):
    from agentcausal_cli import main

    secret = f"sk-e2e-{random.randrange(10**12):012d}-secret"
    monkeypatch.setenv(KEY_ENV, secret)
    fake_server.responder = mac_responder(code=HOSTILE)
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_concurrency = 4\ntimeout_s = 30\ncontext_window = 8192\n\n'
        '[routings.default]\ndefault = "fake"\n'
    )
    out, cache = tmp_path / "run", tmp_path / "cache"
    rc = main(
        [
            "discover",
            "--dataset",
            "cancer",
            "--method",
            "dcm_only",
            "--n",
            "200",
            "--executor",
            "coding",
            "--coding-attempts",
            "2",
            "--profiles",
            str(toml),
            "--cache-dir",
            str(cache),
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    coder = [
        b
        for b in fake_server.chat_requests
        if b.get("response_format", {}).get("json_schema", {}).get("name") == "CodeReply"
    ]
    assert len(coder) == 2  # the hostile script ran, failed, and its stderr went back for a second attempt
    assert "LEAK" in coder[1]["messages"][-1]["content"]
    assert coder and all(b["_auth"] == f"Bearer {secret}" for b in coder)  # the key was in use by the parent
    assert secret not in printed.out + printed.err
    assert secret not in str([b["messages"] for b in fake_server.chat_requests])
    for root in (out, cache, Path(os.environ["PREFECT_HOME"])):
        assert _files_containing(root, secret.encode()) == [], root
    outcomes = (out / "outcomes.jsonl").read_text()
    assert "LEAK" in outcomes  # the attempts are recorded, without the key
