"""storage/object_store.py against a real S3 server and a local directory: what the log relies on."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from storage.object_store import (
    ObjectNotFoundError,
    ObjectStoreError,
    ObstoreObjectStore,
    open_object_store,
    payload_signed,
)
from tests.s3_server import REGION, LoopbackS3Server, S3Server


async def _keys(store: ObstoreObjectStore, prefix: str = "") -> dict[str, int]:
    return {info.key: info.size async for chunk in store.list(prefix) for info in chunk}


async def test_put_then_ranged_gets(object_store: ObstoreObjectStore) -> None:
    data = bytes(range(256)) * 64
    await object_store.put("flush/0001", [data[:1000], memoryview(data)[1000:]])
    assert await object_store.get_range("flush/0001", 0, len(data)) == data
    assert await object_store.get_range("flush/0001", 1000, 1061) == data[1000:1061]
    assert await object_store.get_range("flush/0001", 5, 5) == b""


async def test_list_by_prefix_and_delete(object_store: ObstoreObjectStore) -> None:
    for key, size in (("flush/a", 3), ("flush/b", 5), ("other/c", 7)):
        await object_store.put(key, b"x" * size)
    assert await _keys(object_store, "flush/") == {"flush/a": 3, "flush/b": 5}
    await object_store.delete(["flush/a", "flush/missing"])
    assert await _keys(object_store) == {"flush/b": 5, "other/c": 7}


async def test_a_missing_key_is_not_found(object_store: ObstoreObjectStore) -> None:
    with pytest.raises(ObjectNotFoundError, match="flush/none"):
        await object_store.get_range("flush/none", 0, 10)


async def test_a_wrong_secret_is_refused(s3_server: S3Server, s3_bucket: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    store = open_object_store(s3_server.url(s3_bucket), endpoint=s3_server.endpoint, region=REGION)
    with pytest.raises(ObjectStoreError) as caught:
        await store.put("k", b"v")
    assert not isinstance(caught.value, ObjectNotFoundError)
    assert caught.value.args[0].startswith(f"s3://{s3_bucket}: 'k': ")


def test_no_credentials_never_reach_for_the_cloud_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    with pytest.raises(ValueError, match="no credentials"):
        open_object_store("s3://bucket", endpoint="http://127.0.0.1:9")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(ValueError, match="no credentials"):
        open_object_store("s3://bucket")


def test_urls_it_cannot_use() -> None:
    for url, why in (("http://bucket/x", "must be s3://"), ("s3:///prefix", "names a bucket"),
                     ("file://host/dir", "local directory")):
        with pytest.raises(ValueError, match=why):
            open_object_store(url)


def test_the_body_is_signed_only_over_plain_http_to_another_host() -> None:
    assert payload_signed("http://10.1.2.3:9000")
    assert payload_signed("http://objects.internal:9000")  # a name may resolve anywhere
    for endpoint in (None, "https://objects.internal", "https://10.1.2.3", "http://127.0.0.1:9000",
                     "http://localhost:9000", "http://[::1]:9000"):
        assert not payload_signed(endpoint), endpoint


@contextlib.asynccontextmanager
async def _recording_relay(endpoint: str, sent: bytearray) -> AsyncIterator[str]:
    """A loopback TCP relay to endpoint keeping every byte the client sends; yields its endpoint.
    Its connections are closed on leaving (the client keeps them alive in its pool)."""
    target = urlsplit(endpoint)
    writers: list[asyncio.StreamWriter] = []

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, keep: bytearray | None) -> None:
        while data := await reader.read(65536):
            if keep is not None:
                keep.extend(data)
            writer.write(data)
            await writer.drain()

    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(target.hostname, target.port)
        writers.extend((client_w, server_w))
        await asyncio.gather(pump(client_r, server_w, sent), pump(server_r, client_w, None), return_exceptions=True)

    relay = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{relay.sockets[0].getsockname()[1]}"
    finally:
        relay.close()
        for writer in writers:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        await relay.wait_closed()


async def test_a_put_to_a_loopback_store_sends_an_unsigned_body(s3_server: LoopbackS3Server, s3_bucket: str) -> None:
    sent = bytearray()
    async with _recording_relay(s3_server.endpoint, sent) as endpoint:
        store = open_object_store(s3_server.url(s3_bucket), endpoint=endpoint, region=REGION)
        await store.put("flush/0001", [b"x" * 5000, b"y" * 5000])
        assert await store.get_range("flush/0001", 4990, 5010) == b"x" * 10 + b"y" * 10  # the server took it
    put = re.search(rb"^PUT [^\r]*\r\n(?:[^\r]+\r\n)*?x-amz-content-sha256: *([^\r]+)\r\n", sent, re.I | re.M)
    assert put is not None and put.group(1) == b"UNSIGNED-PAYLOAD"
