"""`accel.cache_lock.compiling`: one compile per cache key at a time; the others wait, then
look the key up again. (Two processes through compile_train_step: test_data_parallel.py.)"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import pytest
from accel.cache_lock import compiling


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))


def _hold(key: str, seconds: float, started: threading.Event) -> threading.Thread:
    """Another holder (a thread opens its own lock file description, as a process would)."""
    def run() -> None:
        with compiling(key):
            started.set()
            time.sleep(seconds)

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(10)
    return thread


def test_a_second_compiler_of_the_same_key_waits_for_the_first() -> None:
    started = threading.Event()
    holder = _hold("k1", 0.5, started)
    t = time.monotonic()
    with compiling("k1") as waited:
        elapsed = time.monotonic() - t
    holder.join()
    assert waited and elapsed >= 0.3, (waited, elapsed)


def test_other_keys_and_no_key_do_not_wait() -> None:
    started = threading.Event()
    holder = _hold("k2", 1.0, started)
    t = time.monotonic()
    with compiling("other") as a, compiling(None) as b:
        pass
    assert not a and not b and time.monotonic() - t < 0.5
    lock = Path(os.environ["ACCEL_CACHE_DIR"]) / "k2.lock"
    assert lock.exists()
    holder.join()
    assert not lock.exists()  # the holder removed it


def test_a_key_held_by_this_thread_passes_through() -> None:
    with compiling("k3") as outer, compiling("k3") as inner:
        assert not outer and not inner


def test_past_the_wait_limit_the_waiter_compiles_with_a_warning(monkeypatch, caplog) -> None:
    monkeypatch.setenv("ACCEL_COMPILE_LOCK_WAIT", "0.2")
    started = threading.Event()
    holder = _hold("k4", 2.0, started)
    t = time.monotonic()
    with caplog.at_level(logging.INFO, logger="accel.cache"), compiling("k4") as waited:
        elapsed = time.monotonic() - t
    # The waiter did not hold the lock: the holder's file stays until the holder is done.
    assert (Path(os.environ["ACCEL_CACHE_DIR"]) / "k4.lock").exists()
    holder.join()
    assert waited and 0.2 <= elapsed < 1.5, elapsed
    assert "another process is compiling the same program" in caplog.text
    assert "ACCEL_COMPILE_LOCK_WAIT" in caplog.text and "compiling here too" in caplog.text


def test_a_bad_wait_limit_is_one_warning_and_the_default(monkeypatch, caplog) -> None:
    from accel.cache_lock import wait_limit

    monkeypatch.setenv("ACCEL_COMPILE_LOCK_WAIT", "soon")
    with caplog.at_level(logging.WARNING, logger="accel.cache"):
        assert wait_limit() == 1800.0
    assert "ACCEL_COMPILE_LOCK_WAIT='soon' is not a number" in caplog.text


def test_a_cache_folder_that_cannot_be_written_compiles_without_a_lock(tmp_path, monkeypatch
                                                                        ) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(blocker / "cache"))  # under a regular file
    with compiling("k5") as waited:
        assert not waited
