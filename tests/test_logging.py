"""Structured logs: a worker-side record carries the job id and chunk of the running task, as
JSON (AZULSIM_LOG_FORMAT=json) or appended to the text line. The real worker's JSON log is
checked in test_metrics.py (test_real_worker_serves_metrics_and_logs_json)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from workers import logs as wlog
from workers.app import make_app
from workers.settings import load_settings


@pytest.fixture
def chunk_task():
    return make_app(load_settings({})).chunk_task


def _logger(fmt: str) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger(f"test.azulsim.{fmt}")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    wlog.apply_to_handlers(logger, fmt)
    return logger, stream


def test_task_context_reads_the_chunk_tasks_own_signature(chunk_task):
    assert wlog.task_context(chunk_task, ["job-1", 7], {}) == {"job_id": "job-1", "chunk": 7}
    assert wlog.task_context(chunk_task, [], {"job_id": "j", "chunk": "3"}) == {
        "job_id": "j",
        "chunk": 3,
    }
    assert wlog.task_context(chunk_task, ["j"], {"chunk": 2}) == {"job_id": "j", "chunk": 2}


def test_worker_record_is_json_with_job_id_and_chunk(chunk_task):
    logger, stream = _logger("json")
    wlog._on_prerun(
        sender=chunk_task, task_id="t-1", task=chunk_task, args=["abc123", 4], kwargs={}
    )
    try:
        logger.info("chunk %s/%d done", "abc123", 4, extra={"games": 50})
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logger.exception("failed")
    finally:
        wlog._on_postrun(sender=chunk_task, task_id="t-1")
    logger.warning("between chunks")
    first, second, third = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "chunk abc123/4 done"
    assert (first["job_id"], first["chunk"], first["task_id"]) == ("abc123", 4, "t-1")
    assert first["games"] == 50 and first["level"] == "INFO"
    assert first["logger"] == "test.azulsim.json" and first["ts"].endswith("Z")
    assert second["job_id"] == "abc123" and "RuntimeError: boom" in second["exc"]
    assert "job_id" not in third and "chunk" not in third  # context cleared after the task


def test_text_lines_get_the_context_appended(chunk_task):
    logger, stream = _logger("text")
    with wlog.log_context(job_id="j9", chunk=2):
        logger.info("playing")
    logger.info("idle")
    inside, outside = stream.getvalue().splitlines()
    assert inside.endswith("playing [job=j9 chunk=2]")
    assert outside.endswith("idle") and "job=" not in outside


def test_celery_logger_setup_signal_switches_handlers_to_json(monkeypatch):
    monkeypatch.setenv("AZULSIM_LOG_FORMAT", "json")
    logger = logging.getLogger("test.azulsim.celery")
    stream = io.StringIO()
    logger.handlers[:] = [logging.StreamHandler(stream)]
    logger.propagate = False
    root = logging.getLogger()
    saved = list(root.handlers)
    root.handlers[:] = []  # the signal handler also touches the root's handlers: keep pytest's
    try:
        wlog._on_setup_logger(logger=logger)
    finally:
        root.handlers[:] = saved
    with wlog.log_context(job_id="x", chunk=0):
        logger.error("hello")
    record = json.loads(stream.getvalue())
    assert record["message"] == "hello" and record["job_id"] == "x" and record["chunk"] == 0


def test_configure_logging_for_the_api(monkeypatch):
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()
    try:
        wlog.configure_logging("json", "DEBUG", stream=stream)
        logging.getLogger("azulsim.rpc").info(
            "azulsim.v1.AzulSim/GetJob NOT_FOUND 1.0 ms",
            extra={"rpc_method": "GetJob", "grpc_code": "NOT_FOUND", "peer": "ipv4:1.2.3.4:5"},
        )
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    record = json.loads(stream.getvalue())
    assert record["grpc_code"] == "NOT_FOUND" and record["rpc_method"] == "GetJob"


def test_bad_settings_name_the_variable():
    with pytest.raises(ValueError, match="AZULSIM_LOG_FORMAT"):
        wlog.log_format({"AZULSIM_LOG_FORMAT": "xml"})
    with pytest.raises(ValueError, match="AZULSIM_LOG_LEVEL"):
        wlog.log_level({"AZULSIM_LOG_LEVEL": "loud"})
    assert wlog.log_format({}) == "text" and wlog.log_level({}) == logging.INFO
