"""agentcausal.llm.limits: the retry policy's waits, what an endpoint counts and how a reply that is no JSON
object fails."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from urllib3.response import HTTPResponse
from urllib3.util.retry import RequestHistory

from agentcausal.exceptions import EndpointUnreachableError, LLMCallError
from agentcausal.llm import Gateway
from agentcausal.llm.limits import RetryPolicy, _json_body, retry_policy
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from tests.conftest import fake_profiles


def _after(k: int) -> RetryPolicy:
    """The policy after ``k`` retries."""
    return retry_policy(5).new(history=tuple(RequestHistory("POST", "/x", None, 500, None) for _ in range(k)))


def test_backoff_doubles_from_half_a_second_to_eight_with_at_most_a_quarter_off():
    assert _after(0).get_backoff_time() == 0.0
    for k, base in ((1, 0.5), (2, 1.0), (3, 2.0), (5, 8.0), (9, 8.0)):
        waits = [_after(k).get_backoff_time() for _ in range(200)]
        assert all(0.75 * base <= w <= base for w in waits), (k, min(waits), max(waits))
        assert max(waits) - min(waits) > 0  # jittered


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after-ms": "5", "Retry-After": "30"}, 0.005),
        ({"Retry-After": "120"}, None),  # over 60 s: the backoff decides
        ({"retry-after-ms": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers_set_the_wait_when_they_say_0_to_60_s(headers, wait):
    got = retry_policy(2).get_retry_after(HTTPResponse(status=429, headers=headers))
    assert got == pytest.approx(wait) if wait is not None else got is None


def test_timer_counts_each_attempt_sent_and_408_409_are_retried():
    with FakeOpenAIServer(replies=["ok"], faults=[408, 409]) as srv:
        gw = Gateway(fake_profiles(srv.base_url), cache_dir=None, max_retries=3)
        assert gw.chat("baseline", [{"role": "user", "content": "x"}]) == "ok"
        assert srv.count == 3 and gw.usage.total().requests == 3
        gw.close()


def test_exhausted_retries_count_every_attempt_and_raise_unreachable():
    with FakeOpenAIServer(faults=[503, 503, 503]) as srv:
        gw = Gateway(fake_profiles(srv.base_url), cache_dir=None, max_retries=2)
        with pytest.raises(EndpointUnreachableError, match="HTTP 503 \\(2 retries\\)"):
            gw.chat("baseline", [{"role": "user", "content": "x"}])
        assert srv.count == 3 and gw.usage.total().requests == 3
        gw.close()


def _serve(body: bytes) -> tuple[ThreadingHTTPServer, list[bytes]]:
    """A server answering every POST with ``body``; the request bodies it got."""
    got: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, got


@pytest.mark.parametrize("body", [b"[1, 2]", b"<html>busy</html>"])
def test_a_reply_that_is_not_a_json_object_is_an_llm_call_error(body):
    srv, _ = _serve(body)
    try:
        gw = Gateway(fake_profiles(f"http://127.0.0.1:{srv.server_port}/v1"), cache_dir=None, max_retries=0)
        with pytest.raises(LLMCallError, match="not a JSON object|not JSON"):
            gw.chat("baseline", [{"role": "user", "content": "x"}])
        gw.close()
    finally:
        srv.shutdown()


def test_a_prompt_goes_out_as_utf8_json_the_server_reads_back_to_the_same_text():
    text = 'naïve → 因果 \\ "quoted"\n'
    srv, got = _serve(b'{"choices": [{"message": {"content": "ok"}}]}')
    try:
        gw = Gateway(fake_profiles(f"http://127.0.0.1:{srv.server_port}/v1"), cache_dir=None, max_retries=0)
        assert gw.chat("baseline", [{"role": "user", "content": text}]) == "ok"
        gw.close()
    finally:
        srv.shutdown()
    assert json.loads(got[0])["messages"][0]["content"] == text


def test_a_body_orjson_refuses_goes_as_json_dumps_writes_it():
    body = {"model": "m", "extra_body": {1: "an int key"}}  # orjson takes only str keys
    assert json.loads(_json_body(body)) == {"model": "m", "extra_body": {"1": "an int key"}}


def test_a_reply_with_a_nan_that_python_reads_is_read():
    srv, _ = _serve(b'{"choices": [{"message": {"content": "ok"}}], "score": NaN}')
    try:
        gw = Gateway(fake_profiles(f"http://127.0.0.1:{srv.server_port}/v1"), cache_dir=None, max_retries=0)
        assert gw.chat("baseline", [{"role": "user", "content": "x"}]) == "ok"
        gw.close()
    finally:
        srv.shutdown()
