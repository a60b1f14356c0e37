"""Requests that decode but are invalid, for every API and version in the dispatch table.

For each, a valid request built from kio's types (tests/request_samples.py) is sent, then one
variant per field: null in every array/string/bytes field, -1, the type's limits and unknown enum
values (7, 99) in every integer field. Every variant must get an answer, or, where Kafka closes
the connection (a null where the schema forbids it fails Kafka's parser), a closed connection
with one log line; never a traceback or an ERROR line, and the broker keeps serving."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from broker.dispatch import HANDLERS
from broker.log_limit import LogLimit
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.kafka_wire import RawClient, encode_request, frame, recv_frame
from tests.request_samples import TOPIC, Variant, encode_header, sample_request, variants

pytestmark = pytest.mark.e2e

SETTINGS = {"auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0"}
WAIT_S = 15.0
TABLE = [(h.api_key, v) for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
         for v in range(h.min_version, h.max_version + 1) if h.parses(v)]


@dataclass
class Outcome:
    key: ApiKey
    version: int
    label: str
    correlation_id: int
    result: str  # "answered", "closed" or "timeout"


# The broker logs closes at most 50 a second once a burst of 200 is spent (broker/log_limit.py), and
# each test counts the lines: the module's broker sees ~840 closes, which a fast machine caused
# quicker than that, and lines were left out. A stricter bucket here keeps them all logged.
CLOSES = LogLimit(per_second=45, burst=150)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("sweep") / "data", SETTINGS).start()
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        f.result(WAIT_S)
    yield proc
    proc.close()


class Sender:
    """One connection at a time; a fresh one after the broker closes it."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.sock: socket.socket | None = None
        self.correlation_id = 1000

    def send(self, key: ApiKey, version: int, variant: Variant, request: object) -> Outcome:
        self.correlation_id += 1
        cid = self.correlation_id
        if self.sock is None:
            host, port = self.bootstrap.rsplit(":", 1)
            self.sock = socket.create_connection((host, int(port)), timeout=WAIT_S)
        if variant.body is not None:
            payload = encode_header(request, cid) + variant.body
        else:
            payload = encode_request(variant.entity, cid)
        self.sock.sendall(frame(payload))
        try:
            answer = recv_frame(self.sock)
        except (ConnectionError, TimeoutError) as exc:
            self.sock.close()
            self.sock = None
            while CLOSES.allow() is None:
                time.sleep(0.01)
            return Outcome(key, version, variant.label, cid, "timeout" if isinstance(exc, TimeoutError) else "closed")
        # The body is not decoded: kio's reader refuses the -1 timestamps Kafka sends (and we do).
        (answered_id,) = struct.unpack_from(">i", answer)
        result = "answered" if answered_id == cid else f"answer to {answered_id}"
        return Outcome(key, version, variant.label, cid, result)


def sweep(broker: BrokerProcess, table: list[tuple[ApiKey, int]]) -> list[Outcome]:
    sender = Sender(broker.bootstrap)
    outcomes = []
    try:
        for key, version in table:
            request = sample_request(key, version)
            for variant in (Variant("valid", entity=request), *variants(request)):
                outcomes.append(sender.send(key, version, variant, request))
    finally:
        if sender.sock is not None:
            sender.sock.close()
    return outcomes


def settled_log(broker: BrokerProcess) -> list[str]:
    """The broker's log once it has stopped growing (lines arrive through a pipe)."""
    count = -1
    while count != len(broker.log_lines):
        count = len(broker.log_lines)
        time.sleep(0.2)
    return list(broker.log_lines)


def allowed_close(outcome: Outcome) -> bool:
    # Kafka's generated parsers reject a null in a non-nullable field and close the connection.
    return outcome.label.endswith("(not nullable)")


@pytest.mark.parametrize("key", sorted({k for k, _ in TABLE}), ids=lambda k: k.name)
def test_invalid_requests_get_answers_not_tracebacks(broker: BrokerProcess, key: ApiKey) -> None:
    start = len(broker.log_lines)
    outcomes = sweep(broker, [(k, v) for k, v in TABLE if k == key])
    lines = settled_log(broker)[start:]
    tracebacks = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
    failed = [line for line in lines if " ERROR " in line]
    assert not tracebacks and not failed, "".join(failed)
    bad = [o for o in outcomes if o.result != "answered" and not (o.result == "closed" and allowed_close(o))]
    assert not bad, "\n".join(f"{o.key.name} v{o.version} {o.label}: {o.result}" for o in bad)
    closes = [o for o in outcomes if o.result == "closed"]
    assert len([line for line in lines if "closing connection" in line]) == len(closes)
    assert len([line for line in lines if " WARNING " in line]) <= len(outcomes)
    with RawClient(broker.bootstrap) as client:
        answer = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert answer.error_code is ErrorCode.none

