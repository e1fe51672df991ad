"""Make ``docs/report-attribution.png``: the first screen of an unlabelled run's ``report.html`` in headless Chromium.

The run: the OTel GenAI and OpenInference example files of the importer tests (a
3-agent run, unlabelled, spans with ids), attributed by DCFA and All-at-Once
under ``small`` with ``quote_evidence`` on, against the fake OpenAI server
(TEST DOUBLE: :class:`agentcausal_fakes.responders.BenchResponder` wrapped by
:class:`agentcausal_fakes.evidence.EvidenceResponder`), so the reasons are the
responder's, not a model's. Needs Debian's ``chromium`` (``apt-get install -y chromium``)::

    python -m bench.report_screenshot [--out docs/report-attribution.png] [--keep RUN_DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def make_run(work: Path) -> Path:
    """Attribute the two example files into ``work/run`` on the fake server; returns the run folder."""
    import contextlib
    import io

    from agentcausal_cli import main
    from agentcausal_fakes.evidence import EvidenceResponder
    from agentcausal_fakes.fake_openai import FakeOpenAIServer
    from agentcausal_fakes.responders import BenchResponder
    from agentcausal_fakes.spans import genai_spans, openinference_spans, otlp_json

    otel, oi = work / "otel.json", work / "openinference.json"
    otel.write_text(json.dumps(otlp_json(genai_spans())))
    oi.write_text(json.dumps(otlp_json(openinference_spans())))
    with FakeOpenAIServer(responder=EvidenceResponder(BenchResponder())) as srv:
        toml = work / "profiles.toml"
        toml.write_text(
            f'[profiles.fake]\nkind = "chat"\nbase_url = "{srv.base_url}"\nmodel = "fake-model"\n'
            "max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[profiles.emb]\n"
            f'kind = "embedding"\nbase_url = "{srv.base_url}"\nmodel = "fake-embed"\n\n'
            '[routings.default]\ndefault = "fake"\nembed = "emb"\n'
        )
        run = work / "run"
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(
                [
                    "attribute",
                    str(otel),
                    str(oi),
                    "-m",
                    "dcfa",
                    "-m",
                    "all_at_once",
                    "--no-ground-truth",
                    "--preset",
                    "small",
                    "--set",
                    "dcfa.quote_evidence=true",
                    "--set",
                    "all_at_once.quote_evidence=true",
                    "--profiles",
                    str(toml),
                    "--cache-dir",
                    str(work / "cache"),
                    "--out",
                    str(run),
                    "--no-progress",
                ]
            )
    if rc:
        raise SystemExit(f"attribute exited {rc}")
    return run


def screenshot(page: Path, out: Path, *, width: int = 1280, height: int = 1000) -> Path:
    """Render ``page`` in headless Chromium (fresh profile, no network services) into the PNG ``out``."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("chromium not found: apt-get install -y chromium")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--hide-scrollbars",
                f"--screenshot={out}",
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(REPO / "docs" / "report-attribution.png"))
    p.add_argument("--keep", default=None, help="folder to keep the run in (default: a temporary one)")
    args = p.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="report-shot-"))
    work.mkdir(parents=True, exist_ok=True)
    run = make_run(work)
    print(screenshot(run / "report.html", Path(args.out)))


if __name__ == "__main__":
    main()
