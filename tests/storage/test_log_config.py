"""Topic config validation and IncrementalAlterConfigs arithmetic (pure)."""

import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.log_config import AlterConfigOp, incremental_alter, validate_topic_configs

DEFAULTS = {"cleanup.policy": "delete", "retention.ms": "604800000"}


def code_of(fn, *args) -> ErrorCode:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as info:
        fn(*args)
    return info.value.code


def test_known_names_and_typed_values_pass() -> None:
    validate_topic_configs({"retention.ms": "-1", "cleanup.policy": "compact,delete", "preallocate": "TRUE",
                            "min.cleanable.dirty.ratio": "0.1", "min.insync.replicas": "1"})


@pytest.mark.parametrize("configs", [
    {"no.such.config": "1"},
    {"retention.ms": "soon"},
    {"cleanup.policy": "shred"},
    {"preallocate": "yes"},
    {"message.timestamp.type": "WallClock"},
])
def test_unknown_names_and_bad_values_are_invalid_config(configs: dict[str, str]) -> None:
    assert code_of(validate_topic_configs, configs) is ErrorCode.invalid_config


def test_null_value_is_invalid_request() -> None:
    assert code_of(validate_topic_configs, {"retention.ms": None}) is ErrorCode.invalid_request


def test_set_delete_append_subtract() -> None:
    current = {"retention.ms": "1000", "segment.ms": "5"}
    changes = [("retention.ms", AlterConfigOp.SET, "2000"), ("segment.ms", AlterConfigOp.DELETE, None),
               ("cleanup.policy", AlterConfigOp.APPEND, "compact")]
    assert incremental_alter(current, changes, DEFAULTS) == {"retention.ms": "2000",
                                                             "cleanup.policy": "delete,compact"}
    again = incremental_alter({"cleanup.policy": "delete,compact"},
                              [("cleanup.policy", AlterConfigOp.APPEND, "compact"),
                               ("cleanup.policy", AlterConfigOp.SUBTRACT, "delete")], DEFAULTS)
    assert again == {"cleanup.policy": "compact"}
    assert current == {"retention.ms": "1000", "segment.ms": "5"}  # not mutated


@pytest.mark.parametrize(("change", "code"), [
    (("retention.ms", AlterConfigOp.APPEND, "1"), ErrorCode.invalid_config),
    (("no.such.config", AlterConfigOp.SET, "1"), ErrorCode.invalid_config),
    (("retention.ms", AlterConfigOp.SET, None), ErrorCode.invalid_request),
    (("retention.ms", 9, "1"), ErrorCode.invalid_request),
])
def test_refused_operations(change: tuple[str, int, str | None], code: ErrorCode) -> None:
    assert code_of(incremental_alter, {}, [change], DEFAULTS) is code
