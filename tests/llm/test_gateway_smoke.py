"""Gateway basics against the fake server (test double)."""

from pydantic import BaseModel


class Pick(BaseModel):
    step: int
    agent: str


def test_second_identical_call_makes_no_request(fake_server, make_gateway):
    fake_server.push("hi")
    gw = make_gateway(fake_server)
    msgs = [{"role": "user", "content": "hello"}]
    assert gw.chat("baseline", msgs) == "hi"
    assert gw.chat("baseline", msgs) == "hi"
    assert fake_server.count == 1
    assert gw.usage.by_stage()["baseline"].cache_hits == 1


def test_malformed_json_is_repaired(fake_server, make_gateway):
    fake_server.inject("malformed")
    fake_server.push('{"step": 2, "agent": "WebSurfer"}')
    gw = make_gateway(fake_server)
    out = gw.structured("baseline", [{"role": "user", "content": "x"}], Pick)
    assert out == Pick(step=2, agent="WebSurfer")
    assert fake_server.count == 2
    # the repair request carried the validation error back to the model
    assert "did not validate" in fake_server.requests[1]["messages"][-1]["content"]


def test_identical_calls_in_flight_make_one_request(fake_server, make_gateway):
    import threading

    fake_server.latency_s = 0.3
    fake_server.push('{"step": 1, "agent": "A"}', '{"step": 9, "agent": "B"}')
    gw = make_gateway(fake_server)
    msgs = [{"role": "user", "content": "same prompt"}]
    out: list[Pick] = []
    threads = [threading.Thread(target=lambda: out.append(gw.structured("baseline", msgs, Pick))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake_server.count == 1
    assert out == [Pick(step=1, agent="A")] * 4
    assert gw.usage.by_stage()["baseline"].cache_hits == 3
    assert gw.cache.keys_in_flight == 0  # no lock left behind
