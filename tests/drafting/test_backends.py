"""The drafter backends against a real OpenAI-compatible server process: what a request carries,
how many run at once, what is retried and what fails at once, and where the API key goes (only
into the request's header)."""

from __future__ import annotations

import base64
import logging
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import pytest

from app.drafting import backends
from app.drafting.backends import DraftImage, DraftRequest, DrafterError, OpenAIBackend
from app.drafting.config import OpenAIDrafter, drafters
from app.errors import Invalid
from tests.conftest import free_port, png_bytes
from tests.drafting.conftest import KEY
from tests.drafting.kinds import SCHEMA

VALID = '{"choice": "a", "reason": "red"}'


def backend(url: str, **options) -> OpenAIBackend:
    return OpenAIBackend("stubby", OpenAIDrafter(backend="openai", base_url=url, model="stub-vlm", **options))


def ask(text: str = "Question: Q0", images=(), **options) -> DraftRequest:
    return DraftRequest(user=text, system="Be brief.", images=images, schema=SCHEMA, schema_name="test.choice", **options)


def test_a_request_carries_text_images_schema_and_sampling_and_the_reply_its_cost(fresh_stub, monkeypatch):
    fresh_stub.set(reply=VALID)
    monkeypatch.setenv("STUB_KEY", KEY)
    image = png_bytes((10, 200, 10))
    [reply] = backend(fresh_stub.url, api_key_env="STUB_KEY").complete(
        [ask(images=(DraftImage("image/png", image),), max_tokens=20, temperature=0.7, seed=5)]
    )
    assert (reply.text, reply.model, reply.finish_reason) == (VALID, "stub-vlm", "stop")
    assert (reply.prompt_tokens, reply.completion_tokens) == (len("Question: Q0") + 100, len(VALID))
    assert reply.latency_ms >= 0
    [seen] = fresh_stub.requests()
    assert seen["headers"]["authorization"] == f"Bearer {KEY}"
    body = seen["body"]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    text, picture = body["messages"][1]["content"]
    assert text == {"type": "text", "text": "Question: Q0"}  # the server constrains the answer: no schema in the text
    assert picture["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(image).decode()
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "test_choice", "schema": SCHEMA, "strict": True}}
    assert (body["model"], body["max_tokens"], body["temperature"], body["seed"]) == ("stub-vlm", 20, 0.7, 5)


@pytest.mark.parametrize("structured", ["json_object", "none"])
def test_a_server_that_does_not_take_the_schema_finds_it_in_the_prompt(fresh_stub, structured):
    backend(fresh_stub.url, structured=structured).complete([ask()])
    body = fresh_stub.requests()[0]["body"]
    assert body.get("response_format") == ({"type": "json_object"} if structured == "json_object" else None)
    text = body["messages"][1]["content"][0]["text"]
    assert text.startswith("Question: Q0\n\nAnswer with one JSON object") and '"additionalProperties": false' in text


def test_requests_run_concurrently_up_to_max_in_flight_and_replies_keep_their_order(fresh_stub):
    fresh_stub.set(latency=0.2, replies=[[f"Q{i};", f"answer {i}"] for i in range(12)])
    replies = backend(fresh_stub.url, max_in_flight=4).complete([ask(f"Question: Q{i};") for i in range(12)])
    assert [r.text for r in replies] == [f"answer {i}" for i in range(12)]
    assert fresh_stub.health()["peak"] == 4


def test_429_is_retried_after_the_servers_retry_after_then_succeeds(fresh_stub, caplog):
    fresh_stub.set(reply=VALID, fail_first=1, fail_status=429, retry_after="1")
    with caplog.at_level(logging.WARNING, logger="app.drafting.backends"):
        [reply] = backend(fresh_stub.url, backoff_seconds=0.01).complete([ask()])
    assert reply.text == VALID
    first, second = fresh_stub.requests()
    assert second["at"] - first["at"] >= 1.0  # the server's word, not our 10 ms backoff
    assert "drafter stubby at " + fresh_stub.url in caplog.text and "HTTP 429" in caplog.text


def test_500_forever_fails_after_the_retries_naming_the_drafter_and_its_url(fresh_stub):
    fresh_stub.set(fail_first=-1, fail_status=500)
    with pytest.raises(DrafterError) as failed:
        backend(fresh_stub.url, retries=2, backoff_seconds=0.01).complete([ask()])
    assert str(failed.value) == f"Drafter 'stubby' at {fresh_stub.url} failed 3 times; last: HTTP 500 stub says 500."
    assert len(fresh_stub.requests()) == 3


def test_a_client_error_fails_at_once_with_the_servers_message(fresh_stub):
    fresh_stub.set(fail_first=-1, fail_status=400)
    with pytest.raises(DrafterError, match=r"refused the request: HTTP 400 stub says 400\.$"):
        backend(fresh_stub.url, retries=3, backoff_seconds=0.01).complete([ask()])
    assert len(fresh_stub.requests()) == 1


def test_a_server_that_does_not_answer_in_time_is_a_timeout(fresh_stub):
    fresh_stub.set(latency=3)
    with pytest.raises(DrafterError, match=r"failed 2 times; last: no answer within 0\.3 s \(ReadTimeout\)"):
        backend(fresh_stub.url, timeout_seconds=0.3, retries=1, backoff_seconds=0.01).complete([ask()])


def test_a_server_that_is_down_fails_with_the_connection_error():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(DrafterError, match=r"at http://127\.0\.0\.1:\d+/v1 failed 2 times; last: ConnectError"):
        backend(url, retries=1, backoff_seconds=0.01).complete([ask()])


def test_one_failing_request_fails_the_whole_call(fresh_stub):
    fresh_stub.set(reply=VALID, fail_when="Q3;", fail_status=503)
    with pytest.raises(DrafterError, match="HTTP 503"):
        backend(fresh_stub.url, retries=1, backoff_seconds=0.01).complete([ask(f"Question: Q{i};") for i in range(6)])


def test_the_key_stays_in_the_header(fresh_stub, tmp_path, caplog):
    """Read from a file, sent as Bearer; not in a repr, a log line at any level, or an error message,
    even from a server that quotes it back."""
    secret = tmp_path / "key"
    secret.write_text(KEY + "\n")
    fresh_stub.set(fail_first=-1, fail_status=401, echo_auth=True)
    drafter = backend(fresh_stub.url, api_key_file=secret, backoff_seconds=0.01)
    with caplog.at_level(logging.DEBUG), pytest.raises(DrafterError) as failed:
        drafter.complete([ask()])
    assert fresh_stub.requests()[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert "Bearer [key]" in str(failed.value) and KEY not in str(failed.value)
    fresh_stub.set(reply=VALID, fail_first=2, fail_status=429, retry_after="0")
    with caplog.at_level(logging.DEBUG):
        drafter.complete([ask()])
    assert "HTTP Request: POST" in caplog.text  # httpx did log the requests
    assert KEY not in caplog.text and KEY not in repr(drafter) and KEY not in repr(drafter.config)


def test_a_missing_key_says_where_it_was_looked_for(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(DrafterError, match=r"takes its API key from \$NO_SUCH_KEY, which is not set"):
        backend("http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY")


def test_retry_after_and_backoff():
    assert backends.retry_after("2.5") == 2.5
    assert backends.retry_after("-3") == 0.0
    assert backends.retry_after("100000") == backends.MAX_RETRY_AFTER_SECONDS
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= backends.retry_after(later) <= 30
    assert backends.retry_after("soon") is None and backends.retry_after(None) is None
    for attempt in range(12):
        step = min(backends.MAX_BACKOFF_SECONDS, 0.5 * 2**attempt)
        assert all(step / 2 <= backends.backoff(0.5, attempt) <= step for _ in range(50))


def test_urls_are_shown_without_credentials():
    assert backends.public_url("https://user:pw@api.example.com:8443/v1?key=x#f") == "https://api.example.com:8443/v1"


def test_the_drafters_file_is_checked(tmp_path, settings):
    path = tmp_path / "drafters.toml"
    cfg = settings.model_copy(update={"drafters_file": path})
    with pytest.raises(Invalid, match="cannot be read"):
        drafters(cfg)
    path.write_text('[drafters.a]\nbackend = "openai"\nbase_url = "gpu-box:8000"\nmodel = "m"\n')
    with pytest.raises(Invalid, match=r"field 'drafters\.a\.openai\.base_url': .*base_url is an http:// or https:// URL"):
        drafters(cfg)
    path.write_text('[drafters.a]\nbackend = "openai"\nbase_url = "http://h/v1"\nmodel = "m"\napi_key_env = "A"\napi_key_file = "/k"\n')
    with pytest.raises(Invalid, match="not both"):
        drafters(cfg)
    path.write_text('[drafters.a\n')
    with pytest.raises(Invalid, match="is not valid TOML"):
        drafters(cfg)
    path.write_text('[drafters.gpu]\nbackend = "local"\nmodel_dir = "/models/qwen"\n\n'
                    '[drafters.vllm]\nbackend = "openai"\nbase_url = "http://gpu-box:8000/v1"\nmodel = "Qwen"\napi_key_env = "K"\n')
    found = drafters(cfg)
    assert found["vllm"].describe() == "openai http://gpu-box:8000/v1 model Qwen, 16 in flight, key from $K"
    assert found["gpu"].describe() == "local /models/qwen, batches of 8, device auto, dtype auto"
