"""storage/object_store.py against a real S3 server and a local directory: what the log relies on."""

from __future__ import annotations

import pytest

from storage.object_store import ObjectNotFoundError, ObjectStoreError, ObstoreObjectStore, open_object_store
from tests.s3_server import REGION, S3Server


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
