"""The connection's request loop when handling a request fails outside dispatch (which answers
UNKNOWN_SERVER_ERROR itself): the connection is closed with an ERROR line, as Kafka closes a
connection whose request it cannot process, so the client sees it at once instead of waiting out
its request timeout on a socket nobody reads any more."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest

from broker.config import build_config
from broker.connection import requests as connection
from tests.broker.conftest import serving
from tests.kafka_wire import RawClient


def _ask(port: int) -> str:
    """Ask ApiVersions, then Metadata on one connection: how the second answer ended."""
    with RawClient(f"127.0.0.1:{port}", timeout=20) as client:
        client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        try:
            client.request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                           include_topic_authorized_operations=False))
        except (ConnectionError, EOFError, AssertionError):
            return "closed"
        except TimeoutError:
            return "no answer"
    return "answered"


async def test_a_request_that_fails_outside_dispatch_closes_its_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Seen under KafkaJS's admin suite: a virtualenv replaced under a running broker made the lazy
    # import of a request schema fail with OSError (ELOOP); the loop's task died, the socket stayed
    # open, and KafkaJS's ListGroups waited out its 30 s request timeout.
    decode = connection.decode_request

    def failing_decode(frame, supported):  # type: ignore[no-untyped-def]
        header, request = decode(frame, supported)
        if type(request).__name__ == "MetadataRequest":
            raise OSError(40, "Too many levels of symbolic links")
        return header, request

    monkeypatch.setattr(connection, "decode_request", failing_decode)
    config, _ = build_config({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                              "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"})
    async with serving(config) as broker:
        with caplog.at_level(logging.ERROR, logger="broker.connection"):
            assert await asyncio.to_thread(_ask, broker.port) == "closed"
        assert any("Too many levels of symbolic links" in r.getMessage() or
                   (r.exc_info and "symbolic links" in str(r.exc_info[1])) for r in caplog.records)
