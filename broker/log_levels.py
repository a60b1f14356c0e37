"""The broker's Python loggers seen as Kafka's broker loggers (resource type BROKER_LOGGER, 8):
kafka-configs --entity-type broker-loggers lists them with their levels and changes a level at run
time, as Kafka's LoggingController does for log4j loggers.

Names are the loggers' dotted names, plus "root"; levels are Kafka's (log4j) names, mapped onto
Python's numbers (TRACE has no Python name: it is 5, below DEBUG). Every logger the process has
created is listed, and so is every dotted parent of one ("coordinator" for
"coordinator.group.coordinator"), so a whole package can be set at once. Errors are Kafka's
ConfigAdminManager checks and messages.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final

from protocol.errors import ErrorCode, KafkaError

__all__ = ("ROOT_LOGGER", "VALID_LOG_LEVELS", "current_levels", "validate_change", "apply_change")

ROOT_LOGGER: Final = "root"
# Kafka's LogLevelConfig.VALID_LOG_LEVELS, most verbose first, with the Python level each one is.
_LEVELS: Final = (("TRACE", 5), ("DEBUG", logging.DEBUG), ("INFO", logging.INFO), ("WARN", logging.WARNING),
                  ("ERROR", logging.ERROR), ("FATAL", logging.CRITICAL))
VALID_LOG_LEVELS: Final = tuple(name for name, _ in _LEVELS)
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
_OTHER_OPERATIONS: Final = {2: "APPEND", 3: "SUBTRACT"}  # refused: a level is not a list


def level_name(level: int) -> str:
    """Kafka's name of a Python level: the most severe Kafka level it lets through."""
    name = VALID_LOG_LEVELS[0]
    for candidate, number in _LEVELS:
        if number <= level:
            name = candidate
    return name


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT_LOGGER else logging.getLogger(name)


def _known_names() -> set[str]:
    names = {ROOT_LOGGER}
    for name in logging.root.manager.loggerDict:  # loggers and their placeholder parents
        parts = name.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return names


def current_levels() -> list[tuple[str, str]]:
    """(logger name, effective level) of every logger, sorted by name as Kafka lists them."""
    return [(name, level_name(_logger(name).getEffectiveLevel())) for name in sorted(_known_names())]


def validate_change(name: str, operation: int, value: str | None) -> None:
    """Raise Kafka's error for a change it refuses (ConfigAdminManager.validateLogLevelConfigs);
    nothing is changed."""
    if operation in (SET, DELETE) and name not in _known_names():
        raise KafkaError(ErrorCode.invalid_config, f"Logger {name} does not exist!")
    if operation == SET:
        if value not in VALID_LOG_LEVELS:
            raise KafkaError(ErrorCode.invalid_config,
                             f"Cannot set the log level of {name} to {value} as it is not a supported log level. "
                             f"Valid log levels are {', '.join(VALID_LOG_LEVELS)}")
    elif operation == DELETE:
        if name == ROOT_LOGGER:
            raise KafkaError(ErrorCode.invalid_request, "Removing the log level of the root logger is not allowed")
    elif operation in _OTHER_OPERATIONS:
        raise KafkaError(ErrorCode.invalid_request,
                         f"{_OTHER_OPERATIONS[operation]} operation is not allowed for the BROKER_LOGGER resource")
    else:
        raise KafkaError(ErrorCode.invalid_request,
                         f"Unknown operation type {operation} is not allowed for the BROKER_LOGGER resource")


def apply_change(changes: Iterable[tuple[str, int, str | None]]) -> None:
    """Apply validated (name, operation, value) changes: SET a level, or DELETE it so that the
    logger inherits its parent's again (log4j's setLevel(null))."""
    numbers = dict(_LEVELS)
    for name, operation, value in changes:
        if operation == SET and value is not None:
            _logger(name).setLevel(numbers[value])
        elif operation == DELETE and name != ROOT_LOGGER:
            _logger(name).setLevel(logging.NOTSET)
