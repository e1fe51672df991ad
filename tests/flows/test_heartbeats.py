"""flows.api_server.unwatched_heartbeats_off: Prefect's flow-run heartbeats are off for flows on a server this
project starts unless the user set a frequency; a server at PREFECT_API_URL, or a frequency set, keeps them."""

from __future__ import annotations

from prefect import flow
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
    get_current_settings,
    temporary_settings,
)

from flows.api_server import unwatched_heartbeats_off
from flows.engine import run_dir_of


def _frequency() -> int | None:
    return get_current_settings().flows.heartbeat_frequency


def test_off_on_the_local_server_and_back_after():
    assert get_current_settings().api.url is None  # the suite's flows use the shared local or a temporary server
    before = _frequency()
    assert before is not None  # Prefect's default sends them
    with unwatched_heartbeats_off():
        assert _frequency() is None
    assert _frequency() == before


def test_a_frequency_the_user_set_is_kept():
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 60}):
        with unwatched_heartbeats_off():
            assert _frequency() == 60


def test_a_server_at_prefect_api_url_keeps_them():
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        default = _frequency()
        with unwatched_heartbeats_off():
            assert _frequency() == default is not None


@flow(name="heartbeat-probe")
def _probe() -> str:
    return repr(_frequency())


def test_a_flow_run_through_run_dir_of_sends_none():
    assert run_dir_of(_probe) == "None"


def test_the_settings_without_them_are_made_once_per_settings_and_environment(monkeypatch):
    with unwatched_heartbeats_off():
        first = get_current_settings()
    with unwatched_heartbeats_off():
        assert get_current_settings() is first  # not validated again for every flow run
    monkeypatch.setenv("PREFECT_FLOWS_DEFAULT_RETRIES", "3")  # Prefect reads the environment when it copies settings
    with unwatched_heartbeats_off():
        again = get_current_settings()
        assert again is not first and again.flows.default_retries == 3 and again.flows.heartbeat_frequency is None
