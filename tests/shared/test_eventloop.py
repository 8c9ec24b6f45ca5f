"""Which event loop the adapter and the controller serve on (shared/eventloop.py)."""

from __future__ import annotations

import asyncio

import pytest

from shared import eventloop


async def loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_uvloop_serves_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMHPA_EVENT_LOOP", raising=False)
    assert eventloop.chosen() == "uvloop"
    assert eventloop.run(loop_module()).startswith("uvloop")


def test_asyncio_loop_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMHPA_EVENT_LOOP", "asyncio")
    assert eventloop.run(loop_module()).startswith("asyncio")


def test_an_unknown_loop_is_refused_with_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMHPA_EVENT_LOOP", "trio")
    with pytest.raises(
        eventloop.EventLoopError, match="'trio' is not an event loop: use one of uvloop, asyncio"
    ):
        eventloop.run(loop_module())


def test_the_adapter_refuses_an_unknown_loop_before_serving(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from adapter.__main__ import main

    monkeypatch.setenv("PROMHPA_EVENT_LOOP", "trio")
    code = main(["--prometheus-url=http://127.0.0.1:9", "--config=/dev/null", "--insecure-skip-auth",
                 "--bind-address=127.0.0.1"])  # fmt: skip
    assert code == 2
    assert "PROMHPA_EVENT_LOOP='trio' is not an event loop" in capsys.readouterr().err


def test_a_failed_task_no_one_awaited_is_logged_once_as_an_error_with_its_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import gc

    from shared.logging import configure

    configure(json=True, level="info")

    async def main() -> None:
        async def fails() -> None:
            raise RuntimeError("boom")

        task = asyncio.get_running_loop().create_task(fails(), name="the-failing-one")
        await asyncio.sleep(0.01)
        del task
        gc.collect()  # the task is collected unretrieved: asyncio calls the handler

    eventloop.run(main())
    out = capsys.readouterr()
    text = out.out + out.err
    assert "never retrieved" not in text
    assert text.count('"task": "the-failing-one"') == 1
    assert '"level": "error"' in text
    assert "RuntimeError: boom" in text
