"""meta.properties in Kafka's KRaft form: written at the first start, read and checked at later
ones (issue 11: the cluster id was a fixed string)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from storage.meta_properties import (
    META_PROPERTIES,
    MetaPropertiesError,
    ensure_meta_properties,
    is_uuid,
    kafka_uuid,
    random_uuid,
)


def properties(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def test_issue_11_first_start_writes_kafka_meta_properties(tmp_path: Path) -> None:
    meta = ensure_meta_properties(tmp_path, 3, None)
    written = properties(tmp_path / META_PROPERTIES)
    assert written == {"version": "1", "node.id": "3", "cluster.id": meta.cluster_id,
                       "directory.id": meta.directory_id}
    for text in (meta.cluster_id, meta.directory_id):
        assert len(text) == 22 and len(base64.urlsafe_b64decode(text + "==")) == 16
    assert meta.cluster_id != meta.directory_id
    # Later starts keep the ids.
    assert ensure_meta_properties(tmp_path, 3, None) == meta
    assert ensure_meta_properties(tmp_path, 3, meta.cluster_id) == meta


def test_every_data_dir_gets_its_own_cluster_id(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / str(i)).mkdir()
    ids = {ensure_meta_properties(tmp_path / str(i), 1, None).cluster_id for i in range(5)}
    assert len(ids) == 5


def test_node_id_mismatch_is_refused_with_kafkas_message(tmp_path: Path) -> None:
    ensure_meta_properties(tmp_path, 1, None)
    with pytest.raises(MetaPropertiesError, match="Stored node id 1 doesn't match previous node id 2"):
        ensure_meta_properties(tmp_path, 2, None)


def test_cluster_id_given_formats_then_must_match(tmp_path: Path) -> None:
    wanted = random_uuid()
    assert ensure_meta_properties(tmp_path, 1, wanted).cluster_id == wanted
    other = random_uuid()
    with pytest.raises(MetaPropertiesError, match=f"Invalid cluster.id in: .*Expected {other}, but read {wanted}"):
        ensure_meta_properties(tmp_path, 1, other)


@pytest.mark.parametrize("text", ["eosbroker-cluster-1", "", "AAAAAAAAAAAAAAAAAAAA!!", "AAAAAAAAAAAAAAAAAAAAAB"])
def test_cluster_id_must_be_a_kafka_uuid(tmp_path: Path, text: str) -> None:
    assert not is_uuid(text)
    with pytest.raises(MetaPropertiesError, match="is not a Kafka Uuid"):
        ensure_meta_properties(tmp_path, 1, text)
    assert not (tmp_path / META_PROPERTIES).exists()


def test_unreadable_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / META_PROPERTIES).write_text("version=0\nbroker.id=1\ncluster.id=x\n")
    with pytest.raises(MetaPropertiesError, match="unsupported meta.properties version '0'"):
        ensure_meta_properties(tmp_path, 1, None)


def test_random_uuid_never_starts_with_a_dash() -> None:
    assert all(not random_uuid().startswith("-") and is_uuid(random_uuid()) for _ in range(200))


def test_kafka_uuid_reads_a_directory_id() -> None:
    text = random_uuid()
    assert base64.urlsafe_b64encode(kafka_uuid(text).bytes).rstrip(b"=").decode() == text  # type: ignore[union-attr]
    assert kafka_uuid("") is None and kafka_uuid("not-a-uuid") is None
