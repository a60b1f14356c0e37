"""Clusters whose record data goes to the session's real S3 server (tests/s3_server.py), a fresh
bucket each: the `cluster` fixture of tests/e2e/cluster with cluster.object.store.* set on every
broker, so that suite's tests can run here too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cluster.conftest import Cluster
from tests.s3_server import S3Server


class ObjectCluster(Cluster):
    def __init__(self, url: str, root: Path, store_settings: dict[str, str]) -> None:
        super().__init__(url, root)
        self.store_settings = store_settings

    def start(self, *node_ids: int, settings: dict[str, str] | None = None) -> Cluster:
        return super().start(*node_ids, settings={**self.store_settings, **(settings or {})})


@pytest.fixture
def cluster(pg_url: str, tmp_path: Path, s3_server: S3Server, s3_bucket: str) -> Iterator[ObjectCluster]:
    c = ObjectCluster(pg_url, tmp_path, s3_server.broker_settings(s3_bucket))
    yield c
    problems = c.stop_all()
    assert not problems, "a broker misbehaved; declare what the test provokes with expect_log(regex):\n" \
        + "\n".join(problems)
