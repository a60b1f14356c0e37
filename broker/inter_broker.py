"""Requests from this broker to the others of its cluster (docs/cluster.md), as Kafka's
NetworkClient sends them between brokers: today WriteTxnMarkers, from a transaction coordinator to
the leaders of a transaction's partitions (Kafka's TransactionMarkerChannelManager).

One connection per destination broker, found in the ClusterView by node id and opened on first
use; requests on it are pipelined (a broker answers a connection's requests in order) and matched
to their responses by correlation id. A request that gets no answer within request.timeout.ms, or
whose connection breaks, fails with a retriable error and the connection is closed, so the
caller's next attempt opens a fresh one, to wherever the broker (or the partition's new leader)
is then. Retrying is the caller's business: MarkerWriter retries until the marker is durable.

Typing: a request sent to another broker is an entity of any API, and its answer that API's
response entity, so both are dynamically typed here; the helpers at the end know which.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import ssl
import struct
from collections.abc import Mapping
from typing import Any, Final

from kio.schema.add_partitions_to_txn.v5.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from kio.schema.write_txn_markers.v1.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)

from coordinator.transaction.txn_markers import TxnMarkerEntry
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode, KafkaError
from storage.api import BrokerEndpoint, ClusterView, TopicPartition

from .inter_broker_login import Exchange, LoginFailed, LoginFailureLog, log_in, read_frame
from .security.inter_broker_auth import InterBrokerSecurity

__all__ = ("InterBrokerClient", "TxnMarkerChannel")

log = logging.getLogger(__name__)
_SIZE: Final = struct.Struct(">i")


class _Connection:
    """One connection to one broker, logged in (ApiVersions, then SASL when the listener has it)
    before any request: pipelined requests, one reader task."""

    def __init__(self, endpoint: BrokerEndpoint, client_id: str, security: InterBrokerSecurity | None) -> None:
        self.endpoint = endpoint
        self._client_id = client_id
        self._security = security
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._pending: dict[int, tuple[asyncio.Future[Any], int, int]] = {}
        self._ids = itertools.count(1)
        self._connecting = asyncio.Lock()
        self.versions: dict[int, tuple[int, int]] = {}  # api key -> (min, max) the peer supports
        self.expires_at: float | None = None  # the SASL session's end (KIP-368), loop time
        self.retiring = False  # replaced (its session is ending): closes once its answers are in
        self.closed = False

    async def _connect(self) -> asyncio.StreamWriter:
        async with self._connecting:
            if self._writer is None:
                reader, writer = await self._open()
                if self.closed:  # closed while it was opening (the client shutting down): nobody would
                    writer.close()
                    raise ConnectionError(f"connection to broker {self.endpoint.node_id} closed")
                self._writer = writer
                login = await log_in(Exchange(reader, writer, self._ids, self._client_id), self._security,
                                     self.endpoint.node_id)
                self.versions = login.versions
                if login.session_lifetime_ms > 0:  # log in again on a new connection before it ends
                    self.expires_at = asyncio.get_running_loop().time() + login.session_lifetime_ms * 0.8 / 1000
                self._reader_task = asyncio.get_running_loop().create_task(
                    self._read(reader), name=f"inter-broker reader {self.endpoint.node_id}")
            return self._writer

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        context = self._security.ssl_context if self._security is not None else None
        if context is None:
            return await asyncio.open_connection(self.endpoint.host, self.endpoint.port)
        return await asyncio.open_connection(self.endpoint.host, self.endpoint.port, ssl=context,
                                             server_hostname=self.endpoint.host)

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and asyncio.get_running_loop().time() >= self.expires_at

    async def send(self, request: Any, timeout_s: float) -> Any:
        if self.closed:
            raise ConnectionError(f"connection to broker {self.endpoint.node_id} closed")
        try:
            writer = await asyncio.wait_for(self._connect(), timeout_s)
        except (asyncio.IncompleteReadError, KafkaError) as exc:  # a garbled or cut answer while logging in
            self.close()
            raise ConnectionError(f"broker {self.endpoint.node_id} broke the connection while logging in: "
                                  f"{exc!r}") from None
        except BaseException:
            self.close()
            raise
        api_key, version = int(request.__api_key__), int(request.__version__)
        low, high = self.versions.get(api_key, (0, -1))
        if not low <= version <= high:
            raise KafkaError(ErrorCode.unsupported_version, f"broker {self.endpoint.node_id} does not support api "
                             f"key {api_key} v{version} (it supports v{low}-{high})")
        correlation_id = next(self._ids)
        self._write(writer, encode_request(request, correlation_id, self._client_id))
        # Waited for only once written: a reply registered before a write that failed would be
        # failed by close() with nobody to read it.
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = (reply, api_key, version)
        try:
            return await asyncio.wait_for(reply, timeout_s)
        finally:
            self._pending.pop(correlation_id, None)
            if self.retiring and not self._pending:
                self.close()

    def _write(self, writer: asyncio.StreamWriter, frame: bytes) -> None:
        """Send a request, or ConnectionError if the connection closed while the request waited
        for it: its peer went away, and the reader task closes it on the loop's next turn or
        already did. uvloop refuses a write on a transport that has closed (RuntimeError)."""
        if not (self.closed or writer.is_closing()):
            try:
                writer.write(frame)
                return
            except RuntimeError:  # closed under us: as broken as any other lost connection
                pass
        self.close()
        raise ConnectionError(f"connection to broker {self.endpoint.node_id} closed")

    async def _read(self, reader: asyncio.StreamReader) -> None:
        error: BaseException = ConnectionError(f"connection to broker {self.endpoint.node_id} closed")
        try:
            while True:
                self._deliver(await read_frame(reader, self.endpoint.node_id))
        except (OSError, asyncio.IncompleteReadError, KafkaError) as exc:
            # Every waiting request fails as a broken connection (retriable), whatever broke it.
            error = ConnectionError(f"connection to broker {self.endpoint.node_id} broke: {exc!r}")
        finally:
            self.close(error)

    def _deliver(self, payload: bytes) -> None:
        (correlation_id,) = _SIZE.unpack_from(payload, 0)
        entry = self._pending.pop(correlation_id, None)
        if entry is None:
            return  # its caller timed out and gave up on it
        reply, api_key, version = entry
        if not reply.done():
            try:
                reply.set_result(decode_response(payload, api_key, version)[1])
            except KafkaError as exc:  # its caller hears why (rather than waiting out its timeout)
                reply.set_exception(exc)
                raise

    def retire(self) -> None:
        self.retiring = True
        if not self._pending:
            self.close()

    def close(self, error: BaseException | None = None) -> None:
        self.closed = True
        if self._writer is not None:
            self._writer.close()
        if self._reader_task is not None and self._reader_task is not asyncio.current_task():
            self._reader_task.cancel()
        failure = error or ConnectionError(f"connection to broker {self.endpoint.node_id} closed")
        for reply, _, _ in self._pending.values():
            if not reply.done():
                reply.set_exception(failure)
        self._pending.clear()

    async def wait_closed(self) -> None:
        if self._reader_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader_task
        if self._writer is not None:
            with contextlib.suppress(OSError, ssl.SSLError):
                await self._writer.wait_closed()


class InterBrokerClient:
    """Requests to the other brokers, on the listener named by inter.broker.listener.name with this
    broker's credentials (security; None: each broker's registered address, PLAINTEXT)."""

    def __init__(self, cluster: ClusterView, *, client_id: str, request_timeout_ms: int,
                 security: InterBrokerSecurity | None = None) -> None:
        self.cluster = cluster
        self.client_id = client_id
        self.timeout_s = request_timeout_ms / 1000
        self.security = security
        self._connections: dict[int, _Connection] = {}
        self._retired: set[_Connection] = set()
        self._login_failures = LoginFailureLog()
        self._closed = False  # close() ran: no new connections

    def _endpoint(self, node_id: int) -> BrokerEndpoint:
        for broker in self.cluster.live_brokers():
            if broker.node_id == node_id:
                if self.security is None:
                    return broker
                endpoint = broker.on(self.security.listener_name)
                if endpoint is None:
                    raise KafkaError(ErrorCode.leader_not_available, f"broker {node_id} has no listener "
                                     f"{self.security.listener_name} (inter.broker.listener.name)")
                return endpoint
        raise KafkaError(ErrorCode.leader_not_available, f"broker {node_id} is not a live broker of the cluster")

    def _connection(self, node_id: int) -> _Connection:
        if self._closed:
            raise KafkaError(ErrorCode.network_exception, "this broker is shutting down")
        endpoint = self._endpoint(node_id)
        conn = self._connections.get(node_id)
        if conn is not None and conn.expired and not conn.closed:
            conn.retire()  # its SASL session ends soon: new requests go on a freshly logged-in one
            self._retired = {c for c in self._retired if not c.closed} | {conn}
            conn = None
        elif conn is not None and (conn.closed or conn.endpoint != endpoint):
            conn.close()  # broken, or the broker came back elsewhere
            conn = None
        if conn is None:
            conn = self._connections[node_id] = _Connection(endpoint, self.client_id, self.security)
        return conn

    async def send(self, node_id: int, request: Any) -> Any:
        """The response body; OSError or a retriable KafkaError when there is none."""
        conn = self._connection(node_id)
        try:
            return await conn.send(request, self.timeout_s)
        except TimeoutError:
            conn.close()
            raise KafkaError(ErrorCode.request_timed_out,
                             f"broker {node_id} did not answer within {self.timeout_s:g} s") from None
        except (OSError, asyncio.IncompleteReadError, LoginFailed) as exc:
            conn.close()
            if isinstance(exc, LoginFailed | ssl.SSLError):  # misconfigured, not a passing fault: say so
                self._login_failures.report(node_id, conn.endpoint, self.security, exc)
            # Retriable all the same: the caller's next attempt logs in again.
            raise KafkaError(ErrorCode.network_exception, f"broker {node_id}: {exc!r}") from None

    async def close(self) -> None:
        self._closed = True
        conns = [*self._connections.values(), *self._retired]
        self._connections.clear()
        self._retired.clear()
        for conn in conns:
            conn.close()
        for conn in conns:
            await conn.wait_closed()


class TxnMarkerChannel:
    """The coordinator's RemoteMarkerWriter: markers as WriteTxnMarkers v1 requests.

    The marker writer sends one partition per call, concurrently; calls made in the same turn of
    the event loop for one broker and one marker are sent as a single request, so the leader
    appends them together (one group commit) instead of one request at a time on the connection.
    """

    def __init__(self, client: InterBrokerClient) -> None:
        self.client = client
        self._batches: dict[tuple[int, TxnMarkerEntry], list[tuple[TopicPartition, asyncio.Future[ErrorCode]]]] = {}
        self._sending: set[asyncio.Task[None]] = set()

    async def write_txn_markers(self, node_id: int, entry: TxnMarkerEntry) -> Mapping[TopicPartition, ErrorCode]:
        loop = asyncio.get_running_loop()
        key = (node_id, dataclasses.replace(entry, partitions=()))
        batch = self._batches.get(key)
        if batch is None:  # the first call of this turn: the request goes once the others joined
            batch = self._batches[key] = []
            task = loop.create_task(self._send(key), name=f"markers to broker {node_id}")
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)
        futures = [loop.create_future() for _ in entry.partitions]
        batch += zip(entry.partitions, futures, strict=True)
        return dict(zip(entry.partitions, await asyncio.gather(*futures), strict=True))

    async def _send(self, key: tuple[int, TxnMarkerEntry]) -> None:
        batch = self._batches.pop(key)
        node_id, marker = key
        try:
            results = await self._request(node_id, dataclasses.replace(
                marker, partitions=tuple(dict.fromkeys(tp for tp, _ in batch))))
        except Exception as exc:  # each waiting partition retries on its own
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for tp, future in batch:
            if not future.done():
                future.set_result(results.get(tp, ErrorCode.unknown_server_error))

    async def _request(self, node_id: int, entry: TxnMarkerEntry) -> dict[TopicPartition, ErrorCode]:
        topics: dict[str, list[int]] = {}
        for tp in entry.partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        marker = WritableTxnMarker(
            producer_id=entry.producer_id, producer_epoch=entry.producer_epoch,  # type: ignore[arg-type]
            transaction_result=entry.commit, coordinator_epoch=entry.coordinator_epoch,  # type: ignore[arg-type]
            topics=tuple(WritableTxnMarkerTopic(name=name, partition_indexes=tuple(parts))  # type: ignore[arg-type]
                         for name, parts in topics.items()))
        response = await self.client.send(node_id, WriteTxnMarkersRequest(markers=(marker,)))
        results = {TopicPartition(t.name, p.partition_index): ErrorCode(p.error_code)
                   for m in response.markers if m.producer_id == entry.producer_id
                   for t in m.topics for p in t.partitions}
        log.debug("markers of producer %d sent to broker %d: %s", entry.producer_id, node_id, results)
        return results


async def _add_partitions_request(client: InterBrokerClient, node_id: int, transactional_id: str, producer_id: int,
                                  producer_epoch: int, partitions: list[TopicPartition],
                                  verify_only: bool) -> dict[TopicPartition, ErrorCode]:
    """One AddPartitionsToTxn v5 transaction to the coordinator's broker; each partition's code
    (a top-level error is every partition's)."""
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    txn = AddPartitionsToTxnTransaction(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,  # type: ignore[arg-type]
        verify_only=verify_only, topics=tuple(AddPartitionsToTxnTopic(name=name, partitions=tuple(parts))  # type: ignore[arg-type]
                                              for name, parts in topics.items()))
    response = await client.send(node_id, AddPartitionsToTxnRequest(transactions=(txn,)))
    if response.error_code != ErrorCode.none:
        return dict.fromkeys(partitions, ErrorCode(response.error_code))
    codes = dict.fromkeys(partitions, ErrorCode.none)
    for r in response.results_by_transaction:
        for t in r.topic_results:
            for p in t.results_by_partition:
                codes[TopicPartition(t.name, p.partition_index)] = ErrorCode(p.partition_error_code)
    return codes


async def add_partitions_to_txn(client: InterBrokerClient, node_id: int, transactional_id: str, producer_id: int,
                                producer_epoch: int, partitions: list[TopicPartition]) -> None:
    """AddPartitionsToTxn v5 to the coordinator's broker, as Kafka's partition leaders send it for a
    Transactions V2 Produce (verify_only false: the partitions join the transaction); raises the
    first partition's error."""
    codes = await _add_partitions_request(client, node_id, transactional_id, producer_id, producer_epoch, partitions,
                                          verify_only=False)
    failed = next((c for c in codes.values() if c is not ErrorCode.none), None)
    if failed is not None:
        raise KafkaError(failed, f"the transaction coordinator (broker {node_id}) could not add {len(partitions)} "
                         f"partition(s) to the transaction of '{transactional_id}': {failed.name}")


async def verify_partitions_in_txn(
    client: InterBrokerClient, node_id: int, transactional_id: str, producer_id: int, producer_epoch: int,
    partitions: list[TopicPartition],
) -> dict[TopicPartition, ErrorCode]:
    """AddPartitionsToTxn v5 with verify_only, as Kafka's partition leaders verify a Transactions
    V1 Produce with the coordinator's broker: each partition's code (NONE: in the transaction)."""
    return await _add_partitions_request(client, node_id, transactional_id, producer_id, producer_epoch, partitions,
                                         verify_only=True)
