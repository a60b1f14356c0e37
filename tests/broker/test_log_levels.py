"""Broker loggers (issue 11: broker-logger configs were refused with "resource type 8"): the
broker's Python loggers listed with Kafka's level names, and changed at run time with Kafka's
checks."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from broker.log_levels import DELETE, SET, apply_change, current_levels, level_name, validate_change
from protocol.errors import ErrorCode, KafkaError

NAME = "eostest.levels.child"


@pytest.fixture
def child() -> Iterator[logging.Logger]:
    logger = logging.getLogger(NAME)
    yield logger
    logger.setLevel(logging.NOTSET)
    logging.getLogger("eostest.levels").setLevel(logging.NOTSET)


def levels() -> dict[str, str]:
    return dict(current_levels())


def test_levels_list_loggers_their_parents_and_root(child: logging.Logger) -> None:
    listed = levels()
    assert {"root", "eostest", "eostest.levels", NAME} <= listed.keys()
    assert listed[NAME] == level_name(logging.getLogger().getEffectiveLevel())
    assert [name for name, _ in current_levels()] == sorted(listed)


def test_set_a_parent_then_delete_it(child: logging.Logger) -> None:
    validate_change("eostest.levels", SET, "TRACE")
    apply_change([("eostest.levels", SET, "TRACE")])
    assert levels()["eostest.levels"] == "TRACE" and levels()[NAME] == "TRACE"
    assert child.isEnabledFor(5)
    apply_change([(NAME, SET, "WARN")])
    assert levels()[NAME] == "WARN" and child.getEffectiveLevel() == logging.WARNING
    apply_change([(NAME, DELETE, None)])
    assert levels()[NAME] == "TRACE"  # inherits its parent's again


def test_python_levels_named_as_kafka_names_them() -> None:
    assert [level_name(n) for n in (5, 10, 20, 30, 40, 50, 0, 25)] == [
        "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "TRACE", "INFO"]


@pytest.mark.parametrize(("name", "operation", "value", "code", "message"), [
    (NAME, SET, "LOUD", ErrorCode.invalid_config, f"Cannot set the log level of {NAME} to LOUD"),
    (NAME, SET, "WARNING", ErrorCode.invalid_config, "Valid log levels are TRACE, DEBUG, INFO, WARN, ERROR, FATAL"),
    ("no.such.logger", SET, "DEBUG", ErrorCode.invalid_config, "Logger no.such.logger does not exist!"),
    ("no.such.logger", DELETE, None, ErrorCode.invalid_config, "Logger no.such.logger does not exist!"),
    ("root", DELETE, None, ErrorCode.invalid_request, "Removing the log level of the root logger is not allowed"),
    (NAME, 2, "DEBUG", ErrorCode.invalid_request, "APPEND operation is not allowed for the BROKER_LOGGER resource"),
    (NAME, 9, "DEBUG", ErrorCode.invalid_request, "Unknown operation type 9"),
])
def test_kafkas_checks(child: logging.Logger, name: str, operation: int, value: str | None,
                       code: ErrorCode, message: str) -> None:
    before = levels()
    with pytest.raises(KafkaError) as info:
        validate_change(name, operation, value)
    assert info.value.code == code and message in (info.value.message or "")
    assert levels() == before
