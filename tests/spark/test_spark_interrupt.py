"""Ctrl-C while Spark works (issue 14, finding 8): jobs cancelled quietly from another thread, one clean interrupt.

No JVM: a stand-in SparkContext records the calls the handler makes.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyticdc.spark import session


class _Context:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.thread_names: list[str] = []

    def setLogLevel(self, level: str) -> None:
        self.calls.append(("setLogLevel", level))

    def cancelAllJobs(self) -> None:
        self.calls.append(("cancelAllJobs", None))
        self.thread_names.append(threading.current_thread().name)


class _Spark:
    def __init__(self) -> None:
        self.sparkContext = _Context()


@pytest.fixture
def spark() -> Iterator[_Spark]:
    previous = signal.getsignal(signal.SIGINT)
    fake = _Spark()
    session.install_interrupt_handler(fake)
    try:
        yield fake
    finally:
        signal.signal(signal.SIGINT, previous)
        session._INTERRUPTED.clear()


def test_interrupt_outside_a_jvm_call_cancels_quietly_and_raises(spark: _Spark) -> None:
    assert not session.interrupted()
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    # The JVM's log is silenced before the jobs are cancelled, so no SPARK_JOB_CANCELLED stacks get printed.
    assert spark.sparkContext.calls == [("setLogLevel", "OFF"), ("cancelAllJobs", None)]
    assert session.interrupted()


def test_interrupt_inside_a_jvm_call_cancels_from_another_thread(spark: _Spark) -> None:
    # A function whose module is Py4J's stands for the main thread blocked in a Py4J call: the handler must not
    # call the JVM from there (PySpark's reentrant call) nor raise inside it.
    blocked: dict[str, Any] = {"__name__": "py4j.clientserver", "signal": signal, "time": time}
    exec(  # a fixed snippet, defined under a Py4J module name
        "def send_command():\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "    time.sleep(0.3)\n"
        "    return 'answer'\n", blocked)
    with pytest.raises(KeyboardInterrupt):
        assert blocked["send_command"]() == "answer"  # the call completes: no exception inside it
        for _ in range(100):  # the interrupt is re-delivered once the main thread is out of the call
            time.sleep(0.05)
    assert spark.sparkContext.calls == [("setLogLevel", "OFF"), ("cancelAllJobs", None)]
    assert spark.sparkContext.thread_names == ["pyticdc-cancel"]


def test_cli_main_reports_a_cancelled_spark_job_as_interrupted(
    spark: _Spark, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from pyticdc import cli

    def failing_job(args: Any) -> int:
        session._INTERRUPTED.set()  # Ctrl-C arrived; the Spark call then failed with the cancellation
        raise RuntimeError("Job 0 cancelled part of cancelled job group")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser.set_defaults(run=failing_job)
    assert cli.main([]) == 130
    assert capsys.readouterr().err == "interrupted\n"
