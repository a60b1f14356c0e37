"""pipeline/watermarks.py tries again when a ListOffsets fails because a leader moved (a cluster's
broker stopped or its lease lapsed), and not on errors that another attempt cannot cure."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from pipeline.watermarks import _moved


@pytest.mark.parametrize("code", [KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                                  KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError._TIMED_OUT])
def test_a_moved_leader_is_tried_again(code: int) -> None:
    assert _moved(KafkaException(KafkaError(code)))


@pytest.mark.parametrize("code", [KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.INVALID_REQUEST])
def test_other_errors_are_raised(code: int) -> None:
    assert not _moved(KafkaException(KafkaError(code)))
