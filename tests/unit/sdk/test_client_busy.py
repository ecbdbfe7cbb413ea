"""The typed client's view of a 429 (admission control, decision 0023): ``Busy`` with the
seconds to wait, from the body or the ``Retry-After`` header."""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests
from sand.client import Busy, ClientError, SandClient
from sand.client.gateway import _error

from tests.unit.sdk.fake_apps import AppsStore, fake_apps


def test_invoke_busy_raisesBusyWithRetryAfter_thenSucceedsWhenThereIsRoom() -> None:
    """A refused invocation raises Busy (a ClientError) naming the app and the seconds to wait."""
    store = AppsStore()
    store.add("hello")
    store.busy["hello"] = 4
    with fake_apps(store) as server:
        client = SandClient(server.url, token="t")
        with pytest.raises(Busy) as refused:
            client.invoke("hello", {}, wait=False)
        assert isinstance(refused.value, ClientError)
        assert refused.value.status == 429
        assert refused.value.retry_after_s == 4
        assert "application 'hello'" in str(refused.value)
        del store.busy["hello"]
        assert client.invoke("hello", {"n": 1}).output == {"n": 1}


def _response(status: int, body: object, headers: dict[str, str]) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(body).encode()
    response.headers.update(headers)
    return response


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        ({"error": "busy"}, {"Retry-After": "7"}, 7),  # the header alone (a proxy's 429)
        ({"error": "busy", "retry_after_s": 2}, {"Retry-After": "9"}, 2),  # the body first
        ({"error": "busy"}, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        ({"error": "busy"}, {}, None),
    ],
)
def test_busy_retryAfter_fromBodyElseHeader(
    body: dict[str, object], headers: dict[str, str], expected: int | None
) -> None:
    """retry_after_s: the body's, else the header's seconds; None when neither says."""
    error = _error(_response(429, body, headers))
    assert isinstance(error, Busy)
    assert error.retry_after_s == expected


def test_invoke_busyWait_triesAgainAfterRetryAfter_untilThereIsRoom() -> None:
    """With ``busy_wait_s`` a refused call is sent again after its Retry-After until it is
    served; past the budget the last Busy is raised."""
    store = AppsStore()
    store.add("hello")
    store.busy["hello"] = 0  # Retry-After: 0 (the client waits at least 0.1 s)
    with fake_apps(store) as server:
        patient = SandClient(server.url, token="t", busy_wait_s=30)
        threading.Timer(0.5, lambda: store.busy.pop("hello")).start()
        started = time.monotonic()
        assert patient.invoke("hello", {"n": 2}).output == {"n": 2}
        assert time.monotonic() - started >= 0.5
        store.busy["hello"] = 0
        started = time.monotonic()
        with pytest.raises(Busy):
            SandClient(server.url, token="t", busy_wait_s=0.4).invoke("hello", {})
        assert 0.25 <= time.monotonic() - started < 5
