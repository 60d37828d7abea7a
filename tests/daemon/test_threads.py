"""The tool thread pool: a normal executor whose workers never block interpreter exit."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from cleveragents.service.threads import DaemonThreadPool


def test_results_and_exceptions_come_back() -> None:
    pool = DaemonThreadPool(2, "t")
    assert pool.submit(lambda a, b: a + b, 2, b=3).result(10) == 5
    failing = pool.submit(int, "not a number")
    with pytest.raises(ValueError):
        failing.result(10)
    pool.shutdown()


def test_workers_are_daemon_threads_reused_and_capped() -> None:
    pool = DaemonThreadPool(3, "cap")
    release = threading.Event()
    names: list[str] = []

    def hold() -> None:
        names.append(threading.current_thread().name)
        assert threading.current_thread().daemon
        release.wait(30)

    futures = [pool.submit(hold) for _ in range(6)]
    while len(names) < 3:
        release.wait(0.01)
    assert len(pool._threads) == 3  # the cap holds while all three are busy
    release.set()
    for future in futures:
        future.result(30)
    assert set(names) <= {"cap_0", "cap_1", "cap_2"}
    pool.submit(lambda: None).result(10)
    assert len(pool._threads) == 3
    pool.shutdown()


def test_shutdown_cancels_queued_work_and_refuses_more() -> None:
    pool = DaemonThreadPool(1, "s")
    release = threading.Event()
    running = pool.submit(release.wait, 30)
    queued = pool.submit(lambda: "never")
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
    release.set()
    assert running.result(10) is True


def test_a_stuck_worker_does_not_hold_the_interpreter_open() -> None:
    program = (
        "import threading\n"
        "from cleveragents.service.threads import DaemonThreadPool\n"
        "pool = DaemonThreadPool(1, 'stuck')\n"
        "pool.submit(threading.Event().wait)\n"
        "print('leaving')\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout == b"leaving\n"
