"""The storage seam (issue 9): handlers and coordinators reach partition logs only through
storage/api.py, so another backend (the PostgreSQL one of issue 10) can stand behind it. Only the
backends' own modules (broker/local_backend.py, broker/cluster/backend.py, local_set.py and their
shared_stores.py) may import more of storage/; the start-up that drives them (broker/server.py,
broker/backend.py) only what every backend shares, and nothing past the choice in broker/backend.py
asks which one runs (issue 32)."""

from __future__ import annotations

import pytest

from storage.api import LogSource, PartitionLog, TopicPartition
from storage.log_manager import LogManager
from tests.test_layers import MODULES, REPO, imported_modules

BUILDS_THE_BACKEND = {"broker/local_backend.py", "broker/cluster/backend.py", "broker/cluster/local_set.py",
                      "broker/cluster/shared_stores.py"}
# The data dir's lock and meta.properties, and the service both backends' cleaners are.
SHARED_BY_EVERY_BACKEND = {"storage.log_dir_lock", "storage.meta_properties", "storage.cleaner.log_cleaner"}
DRIVES_THE_BACKEND = {"broker/server.py", "broker/backend.py"}
CALLERS = [m for m in MODULES if m.split("/")[0] in {"broker", "coordinator"} and m not in BUILDS_THE_BACKEND]


def _past_the_seam(path: str, allowed: set[str]) -> set[str]:
    module = path.removesuffix(".py").replace("/", ".")
    # `from storage.api import X` also yields "storage.api.X", which is fine
    return {name for name in imported_modules(REPO / path, module)
            if name.startswith("storage.") and name.split(".")[1] != "api"
            and name not in allowed and name.rsplit(".", 1)[0] not in allowed}


@pytest.mark.parametrize("path", CALLERS)
def test_callers_import_only_the_seam(path: str) -> None:
    allowed = SHARED_BY_EVERY_BACKEND if path in DRIVES_THE_BACKEND else set()
    reached = _past_the_seam(path, allowed)
    assert not reached, f"{path} reaches past storage/api.py: {sorted(reached)}"


@pytest.mark.parametrize("path", ["broker/server.py", "broker/services.py", "broker/state.py"])
def test_start_up_never_asks_which_backend_runs(path: str) -> None:
    source = (REPO / path).read_text()
    for question in ("cluster_url", "self.cluster is", "ClusterBackend", "LocalBackend", "storage.pg"):
        assert question not in source, f"{path} asks which backend runs: {question}"


async def test_the_local_backend_implements_the_seam(tmp_path) -> None:  # type: ignore[no-untyped-def]
    logs = LogManager(tmp_path, {})
    logs.load()
    logs.start()
    await logs.create_topic("t", 1)
    assert isinstance(logs, LogSource)
    assert isinstance(logs.get_log(TopicPartition("t", 0)), PartitionLog)
    await logs.close()
