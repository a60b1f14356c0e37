"""The local backend: one broker on its own, every partition's log in segment files and every
store in the data dir (broker/backend.py's first implementation)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from storage.acl_store import AclFileStore
from storage.api import AclStore, BrokerConfigStore, BrokerEndpoint, ScramCredentials, ScramCredentialStore
from storage.broker_config_store import FileBrokerConfigStore
from storage.cleaner.log_cleaner import CleanerConfig, LogCleaner
from storage.embedded.db import DB_FILE as SET_DATABASE
from storage.feature_levels import FileFeatureLevelStore
from storage.log_manager import LogManager
from storage.producer_id_blocks import LocalProducerIdBlocks

from .backend import AclRecords
from .cluster.local_view import LocalClusterView
from .config import BrokerConfig
from .dynamic_config import log_defaults
from .features import FinalizedFeatures
from .startup import StartupError

__all__ = ("LocalBackend",)

log = logging.getLogger("broker")


class LocalBackend:
    shared = False
    cluster_id: str | None = None  # meta.properties holds it (or cluster.id makes it)

    def __init__(self, config: BrokerConfig, endpoint: Callable[[], BrokerEndpoint]) -> None:
        self.config = config
        self.logs = LogManager(config.data_dir, log_defaults(config), config.producer_id_expiration_ms)
        node_id = config.node_id
        self.view = LocalClusterView(self.logs, endpoint, lambda: node_id)
        self.producer_id_blocks = LocalProducerIdBlocks(config.data_dir)
        self._credentials = ScramCredentialStore(config.data_dir)

    async def connect(self, config: BrokerConfig) -> None:
        self.config = config
        if (config.data_dir / SET_DATABASE).exists():
            raise StartupError(f"{config.data_dir} is the data dir of a set of broker processes ({SET_DATABASE}): "
                               "start it with the --processes it was started with")

    def load(self, config: BrokerConfig) -> None:
        self.logs.load()
        self._credentials.load()
        self.logs.start()

    def features(self, config: BrokerConfig) -> FinalizedFeatures:
        start = config.transaction_version
        try:
            features = FinalizedFeatures({"transaction.version": start}, FileFeatureLevelStore(config.data_dir))
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        if features.level("transaction.version") != start and "transaction.version" in config.static_keys:
            log.info("transaction.version is finalized at %d (changed with UpdateFeatures), not the configured %d",
                     features.level("transaction.version"), start)
        return features

    def acl_store(self, reload: Callable[[AclRecords], None]) -> AclStore:
        return AclFileStore(self.config.data_dir)  # this broker alone changes them

    def scram_credentials(self) -> ScramCredentials:
        return self._credentials

    def broker_config_store(self) -> BrokerConfigStore:
        store = FileBrokerConfigStore(self.config.data_dir)
        try:
            store.load()
        except (OSError, ValueError) as exc:
            raise StartupError(f"cannot load the dynamic broker configs: {exc}") from None
        return store

    def new_cleaner(self, config: CleanerConfig) -> LogCleaner:
        return LogCleaner(self.logs, config)

    async def join(self) -> None:
        return None

    async def leave(self) -> None:
        return None

    async def close(self) -> None:
        await self.logs.close()

    async def abandon(self) -> None:
        return None  # nothing to hand back; logs loaded but never started stay as they are
