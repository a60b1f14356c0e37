"""The object store that holds cluster mode's record data (docs/cluster.md, cluster.object.store.url):
put, ranged get, list and delete, and nothing else, so the log never depends on one client.

ObstoreObjectStore is the one implementation, over obstore (the Rust object_store crate): `s3://BUCKET
/PREFIX` for any S3-compatible service, `file:///DIR` for brokers that share one machine. Every call
raises ObjectStoreError (a plain message naming the key) on any failure of the store, and
ObjectNotFoundError when the key does not exist.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Final, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

import obstore
from obstore.exceptions import NotFoundError
from obstore.store import LocalStore, S3Store

__all__ = ("ObjectInfo", "ObjectNotFoundError", "ObjectStore", "ObjectStoreError", "ObjectStoreSettings",
           "ObstoreObjectStore", "check_writable", "open_object_store", "payload_signed")

_REQUEST_TIMEOUT: Final = "30s"
_CONNECT_TIMEOUT: Final = "5s"
_RETRY_TIMEOUT: Final = timedelta(seconds=10)
T = TypeVar("T")


class ObjectStoreError(Exception):
    """The object store failed a request (unreachable, refused, timed out): reason is the store's
    own first line."""

    def __init__(self, description: str, key: str, reason: str) -> None:
        super().__init__(f"{description}: {key!r}: {reason}")
        self.reason = reason


class ObjectNotFoundError(ObjectStoreError):
    """No object has that key."""


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    key: str  # relative to the store's prefix
    size: int
    last_modified_ms: int


class ObjectStore(Protocol):
    @property
    def description(self) -> str:
        """Where it is, for messages (never a credential)."""
        ...

    async def put(self, key: str, data: bytes | Sequence[bytes | memoryview]) -> None:
        """Store data under key, whole or not at all (parts are concatenated)."""
        ...

    async def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of the object."""
        ...

    def list(self, prefix: str = "") -> AsyncIterator[list[ObjectInfo]]:
        """The objects whose key starts with prefix, in chunks."""
        ...

    async def delete(self, keys: Sequence[str]) -> None:
        """Delete the keys (a missing key is no error)."""
        ...


class ObstoreObjectStore:
    def __init__(self, store: S3Store | LocalStore, description: str) -> None:
        self._store = store
        self._description = description

    @property
    def description(self) -> str:
        return self._description

    async def put(self, key: str, data: bytes | Sequence[bytes | memoryview]) -> None:
        body = data if isinstance(data, bytes) else b"".join(data)
        await self._call(key, obstore.put_async(self._store, key, body))

    async def get_range(self, key: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        return bytes(await self._call(key, obstore.get_range_async(self._store, key, start=start, end=end)))

    async def list(self, prefix: str = "") -> AsyncIterator[list[ObjectInfo]]:
        stream = obstore.list(self._store, prefix or None, chunk_size=1000)
        while True:
            try:
                chunk = await self._call(prefix, anext(stream, None))
            except StopAsyncIteration:
                return
            if chunk is None:
                return
            yield [ObjectInfo(m["path"], m["size"], int(m["last_modified"].timestamp() * 1000)) for m in chunk]

    async def delete(self, keys: Sequence[str]) -> None:
        if not keys:
            return
        try:
            await self._call(keys[0], obstore.delete_async(self._store, list(keys)))
        except ObjectNotFoundError:  # a local directory refuses a missing key: one at a time then
            for key in keys:
                with contextlib.suppress(ObjectNotFoundError):
                    await self._call(key, obstore.delete_async(self._store, key))

    async def _call(self, key: str, request: Awaitable[T]) -> T:
        try:
            return await request
        except (FileNotFoundError, NotFoundError) as exc:
            raise ObjectNotFoundError(self._description, key, "no such object") from exc
        except Exception as exc:
            raise ObjectStoreError(self._description, key, _first_line(exc)) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_object_store(url: str, *, endpoint: str | None = None, region: str | None = None) -> ObstoreObjectStore:
    """The store a cluster.object.store.url names. ValueError for a URL it cannot use. For s3://,
    credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); only
    with AWS's own endpoint and AWS_EC2_METADATA_DISABLED unset may the instance's role give them."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"{url}: a file:// URL names a local directory (file:///DIR)")
        directory = Path(unquote(parts.path))
        directory.mkdir(parents=True, exist_ok=True)
        return ObstoreObjectStore(LocalStore(directory, mkdir=True), f"file://{directory}")
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ValueError(f"{url}: an s3:// URL names a bucket (s3://BUCKET/PREFIX)")
        return ObstoreObjectStore(_s3_store(parts.netloc, parts.path.strip("/"), endpoint, region), url)
    raise ValueError(f"{url}: cluster.object.store.url must be s3://BUCKET/PREFIX or file:///DIR")


@dataclass(frozen=True, slots=True)
class ObjectStoreSettings:
    """cluster.object.store.url, .endpoint and .region: what a process (the cleaner's worker) needs
    to open the store itself; credentials come from its environment."""

    url: str
    endpoint: str | None = None
    region: str | None = None

    def open(self) -> ObstoreObjectStore:
        return open_object_store(self.url, endpoint=self.endpoint, region=self.region)


def _s3_store(bucket: str, prefix: str, endpoint: str | None, region: str | None) -> S3Store:
    credentials = {name: os.environ[var] for name, var in (("access_key_id", "AWS_ACCESS_KEY_ID"),
                                                           ("secret_access_key", "AWS_SECRET_ACCESS_KEY"),
                                                           ("session_token", "AWS_SESSION_TOKEN"))
                   if os.environ.get(var)}
    if "access_key_id" not in credentials and (endpoint is not None or _metadata_disabled()):
        # Without keys the client would ask the cloud's instance metadata address: only on AWS itself.
        raise ValueError("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    options: dict[str, object] = {"timeout": _REQUEST_TIMEOUT, "connect_timeout": _CONNECT_TIMEOUT}
    if endpoint is not None and endpoint.startswith("http://"):
        options["allow_http"] = True
    return S3Store(bucket, prefix=prefix or None, endpoint=endpoint,
                   region=region or os.environ.get("AWS_REGION") or "us-east-1",
                   virtual_hosted_style_request=endpoint is None, client_options=options,  # type: ignore[arg-type]
                   unsigned_payload=not payload_signed(endpoint),
                   retry_config={"max_retries": 3, "retry_timeout": _RETRY_TIMEOUT}, **credentials)  # type: ignore[arg-type]


def payload_signed(endpoint: str | None) -> bool:
    """Whether a PUT signs its body's SHA-256 (SigV4's x-amz-content-sha256) rather than sending
    UNSIGNED-PAYLOAD. Hashing every byte took a fifth of a broker's CPU under produce load (perf,
    docs/cluster.md), and it guards the body on the way only where nothing else does: over plain
    HTTP to another host. Over TLS (AWS's own endpoint, any https:// one) the connection guards it,
    and loopback has nothing on the way. Every request's headers are signed either way."""
    if endpoint is None:
        return False
    parts = urlsplit(endpoint)
    return parts.scheme != "https" and not _loopback(parts.hostname)


def _loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: it may resolve anywhere
        return False


def _metadata_disabled() -> bool:
    return os.environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true"


async def check_writable(store: ObjectStore, node_id: int) -> None:
    """Put and delete a probe object: ObjectStoreError if the store cannot be reached or refuses
    this broker's credentials (a start-up check; the key is this broker's own)."""
    key = f"probe/node-{node_id}-{uuid.uuid4().hex}"
    await store.put(key, b"eosbroker")
    await store.delete([key])
