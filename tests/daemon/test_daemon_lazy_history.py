"""When the daemon opens its run history, through the real daemon over stdio (issue 21: cold
start): on the first request that needs runs, not at start or at `initialize`; what opening
does (an unusable file logged, runs still served unstored) is unchanged, only when."""

from __future__ import annotations

from pathlib import Path

from support.daemon_support import RawDaemon, call, replay_options, write_script


def pause_script(tmp_path: Path) -> str:
    return write_script(
        tmp_path / "script.json",
        {"text": "Pausing.", "tool_calls": [call("pause", seconds=0, label="x")]},
        {"text": "Done."},
    )


async def only_initialized(tmp_path: Path) -> str:
    """A daemon started, initialized and shut down with no other request; its stderr."""
    raw = await RawDaemon.start(tmp_path)
    try:
        await raw.initialize(replay_options(pause_script(tmp_path)))
        await raw.request("shutdown")
    finally:
        await raw.close()
    return raw.stderr.decode()


async def test_the_history_is_opened_by_the_first_request_that_needs_it(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite3"  # where RawDaemon points --history
    await only_initialized(tmp_path)
    assert not history.exists()  # started, initialized, stopped: never opened

    raw = await RawDaemon.start(tmp_path)
    try:
        await raw.initialize(replay_options(pause_script(tmp_path)))
        listed = await raw.request("cleveragents/runs", {})
        assert listed["result"]["runs"] == [], listed
        assert history.is_file()
    finally:
        await raw.close()


async def test_an_unusable_history_is_reported_at_the_first_request_and_runs_still_go(
    tmp_path: Path, sandbox: Path
) -> None:
    (tmp_path / "history.sqlite3").mkdir()  # a folder where the database should be
    unavailable = f"run history {tmp_path / 'history.sqlite3'} unavailable"  # open_history's log
    assert unavailable not in await only_initialized(tmp_path)

    raw = await RawDaemon.start(tmp_path)
    try:
        await raw.initialize(replay_options(pause_script(tmp_path)))
        run = await raw.request("cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)})
        assert run["result"]["stopReason"] == "final_answer", run
        assert run["result"]["content"] == "Done."
        runs = await raw.request("cleveragents/runs", {})
        assert runs["result"]["runs"] == []  # nothing stored, as before
    finally:
        await raw.close()
    assert unavailable in raw.stderr.decode(), raw.stderr.decode()
