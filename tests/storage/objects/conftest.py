"""The object store under test: the session's real S3 server (SeaweedFS, tests/s3_server.py) and a
local directory (file:///DIR), each as cluster.object.store.url would name it."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.object_store import ObstoreObjectStore, open_object_store
from tests.s3_server import REGION


@pytest.fixture(params=["s3", "file"])
def object_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObstoreObjectStore:
    if request.param == "file":
        return open_object_store(f"file://{tmp_path / 'objects'}")
    server = request.getfixturevalue("s3_server")
    bucket = request.getfixturevalue("s3_bucket")
    return open_object_store(server.url(bucket, "cluster-a"), endpoint=server.endpoint, region=REGION)
