"""`<log.dirs>/meta.properties`, as Kafka's KRaft nodes keep it (MetaProperties version 1): the
cluster id, this node's id, and the directory's id, written when the broker first starts on an
empty data dir and checked at every later start, so that a data dir is never served under another
node id or joined to another cluster by mistake.

Kafka writes it with `kafka-storage format -t <cluster id>`; eosbroker formats at first start
instead, with the id given as the eosbroker property `cluster.id`, or a new random one. Ids are
Kafka's Uuid strings: 16 random bytes in URL-safe base64 without padding (22 characters).
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .fs import FileSystem

__all__ = ("META_PROPERTIES", "MetaProperties", "MetaPropertiesError", "ensure_meta_properties", "kafka_uuid",
           "random_uuid")

META_PROPERTIES: Final = "meta.properties"
_VERSION: Final = 1
_UUID_TEXT: Final = re.compile(r"^[A-Za-z0-9_-]{22}$")


class MetaPropertiesError(Exception):
    """meta.properties is unreadable, or disagrees with the configuration; the message says how."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str

    def to_text(self) -> str:
        # Kafka's Properties.store layout: a comment line with the time, then key=value lines.
        stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
        return (f"#\n#{stamp}\nnode.id={self.node_id}\ndirectory.id={self.directory_id}\n"
                f"version={_VERSION}\ncluster.id={self.cluster_id}\n")


def random_uuid() -> str:
    """Kafka's Uuid.randomUuid().toString(); like Kafka, never one that starts with '-', which a
    command line would take for an option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def is_uuid(text: str) -> bool:
    """Whether Kafka's Uuid.fromString accepts text: 22 URL-safe base64 characters, 16 bytes."""
    # 22 characters carry 132 bits: the last one must leave the 4 spare bits zero.
    return _UUID_TEXT.match(text) is not None and base64.urlsafe_b64encode(
        base64.urlsafe_b64decode(text + "==")).rstrip(b"=").decode() == text


def kafka_uuid(text: str) -> uuid.UUID | None:
    """The UUID a Kafka Uuid string stands for (a directory.id); None for an empty or invalid one."""
    if not is_uuid(text):
        return None
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def _parse(path: Path) -> dict[str, str]:
    props = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and line[0] not in "#!":
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def read_meta_properties(path: Path) -> MetaProperties:
    props = _parse(path)
    if props.get("version") != str(_VERSION):
        raise MetaPropertiesError(f"{path}: unsupported meta.properties version {props.get('version')!r}; "
                                  f"eosbroker reads version {_VERSION} (KRaft)")
    missing = [k for k in ("cluster.id", "node.id") if not props.get(k)]
    if missing or not props["node.id"].lstrip("-").isdigit():
        raise MetaPropertiesError(f"{path}: missing or invalid {', '.join(missing) or 'node.id'}")
    return MetaProperties(cluster_id=props["cluster.id"], node_id=int(props["node.id"]),
                          directory_id=props.get("directory.id") or "")


def ensure_meta_properties(data_dir: Path, node_id: int, cluster_id: str | None,
                           fs: FileSystem | None = None) -> MetaProperties:
    """The data dir's meta.properties, written first if the dir has none; raise
    MetaPropertiesError if it names another node or (when cluster_id is given) another cluster."""
    path = data_dir / META_PROPERTIES
    if cluster_id is not None and not is_uuid(cluster_id):
        raise MetaPropertiesError(f"cluster.id {cluster_id!r} is not a Kafka Uuid (22 characters of URL-safe "
                                  "base64, such as kafka-storage random-uuid prints)")
    if not path.exists():
        meta = MetaProperties(cluster_id=cluster_id or random_uuid(), node_id=node_id, directory_id=random_uuid())
        (fs or FileSystem()).write_atomically(path, meta.to_text().encode())
        return meta
    meta = read_meta_properties(path)
    if meta.node_id != node_id:
        raise MetaPropertiesError(
            f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in {path}. If you moved "
            "your data, make sure your configured node id matches. If you intend to create a new node, you "
            "should remove all data in your data directories.")
    if cluster_id is not None and meta.cluster_id != cluster_id:
        raise MetaPropertiesError(f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {meta.cluster_id}")
    return meta
