"""transaction.version at run time (issue 14): UpdateFeatures upgrades and downgrades it with
Kafka's rules and messages, each change raises the finalized-features epoch ApiVersions reports,
and the level survives a restart (storage/feature_levels.py) whatever the start property says."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.features import FinalizedFeatures, UpgradeType
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.feature_levels import FEATURE_LEVELS_FILE, FileFeatureLevelStore
from tests.broker.test_admin_handlers import call

E = ErrorCode
TV = "transaction.version"
SV = "share.version"


def features(path: Path, start: int = 2) -> FinalizedFeatures:
    return FinalizedFeatures({TV: start}, FileFeatureLevelStore(path))


def test_start_level_comes_from_the_property_until_changed(tmp_path: Path) -> None:
    assert (features(tmp_path, 1).level(TV), features(tmp_path, 1).epoch) == (1, 0)
    assert not (tmp_path / FEATURE_LEVELS_FILE).exists()


async def test_a_change_is_durable_and_raises_the_epoch(tmp_path: Path) -> None:
    f = features(tmp_path)
    await f.update(TV, 1, UpgradeType.SAFE_DOWNGRADE)
    await f.update(TV, 1, UpgradeType.SAFE_DOWNGRADE)  # the same level: nothing changes
    assert (f.level(TV), f.epoch) == (1, 1)
    again = features(tmp_path, start=2)  # a restart with the property still at 2
    assert (again.level(TV), again.epoch) == (1, 1)
    await again.update(TV, 2, UpgradeType.UPGRADE)
    assert (features(tmp_path).level(TV), features(tmp_path).epoch) == (2, 2)
    assert features(tmp_path).level("metadata.version") == 25


@pytest.mark.parametrize(("level", "upgrade_type", "why"), [
    (3, UpgradeType.UPGRADE, "Local broker supports versions 0-2."),
    (1, UpgradeType.UPGRADE, "Can't downgrade the version of this feature without setting the upgrade type"),
    (-1, UpgradeType.UNSAFE_DOWNGRADE, "A feature version cannot be less than 0."),
    (1, 9, "The controller does not support the given upgrade type."),
])
async def test_refused_updates_say_why_and_change_nothing(tmp_path: Path, level: int, upgrade_type: int,
                                                         why: str) -> None:
    f = features(tmp_path)
    with pytest.raises(KafkaError) as info:
        await f.update(TV, level, upgrade_type)
    assert info.value.code is E.invalid_update_version
    assert info.value.message.startswith(f"Invalid update version {level} for feature {TV}. {why}")
    assert (f.level(TV), f.epoch) == (2, 0)


async def test_an_upgrade_sent_as_a_downgrade_is_refused(tmp_path: Path) -> None:
    f = features(tmp_path, start=0)
    with pytest.raises(KafkaError, match="Can't downgrade to a newer version."):
        await f.update(TV, 2, UpgradeType.SAFE_DOWNGRADE)


def test_an_unreadable_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / FEATURE_LEVELS_FILE).write_text("transaction.version=two\n")
    with pytest.raises(ValueError, match="expected name=level"):
        features(tmp_path)


@pytest.fixture
async def state(broker_state, tmp_path: Path):  # type: ignore[no-untyped-def]
    s: BrokerState = await broker_state()
    s.features = features(tmp_path)
    return s


async def finalized(state: BrokerState) -> tuple[dict[str, int], int]:
    r = await call(state, ApiKey.API_VERSIONS, 4, client_software_name="t", client_software_version="1")
    return {f.name: f.max_version_level for f in r.finalized_features}, r.finalized_features_epoch


async def test_update_features_changes_what_api_versions_advertises(state: BrokerState) -> None:
    assert (await finalized(state))[0][TV] == 2
    dry = await call(state, ApiKey.UPDATE_FEATURES, 1, timeout=1000, validate_only=True,
                     feature_updates=[{"feature": TV, "max_version_level": 1, "upgrade_type": 2}])
    assert [(r.feature, r.error_code) for r in dry.results] == [(TV, E.none)]
    assert await finalized(state) == ({"metadata.version": 25, "group.version": 1, TV: 2, SV: 2}, 0)
    v0 = await call(state, ApiKey.UPDATE_FEATURES, 0, timeout=1000,
                    feature_updates=[{"feature": TV, "max_version_level": 0, "allow_downgrade": True}])
    assert [(r.feature, r.error_code) for r in v0.results] == [(TV, E.none)]
    # level 0 is not listed as finalized, as Kafka leaves out features at level 0
    assert await finalized(state) == ({"metadata.version": 25, "group.version": 1, SV: 2}, 1)
    up = await call(state, ApiKey.UPDATE_FEATURES, 2, timeout=1000, validate_only=False,
                    feature_updates=[{"feature": TV, "max_version_level": 2, "upgrade_type": 1}])
    assert up.error_code is E.none
    assert await finalized(state) == ({"metadata.version": 25, "group.version": 1, TV: 2, SV: 2}, 2)


async def test_one_bad_update_applies_none(state: BrokerState) -> None:
    r = await call(state, ApiKey.UPDATE_FEATURES, 1, timeout=1000, validate_only=False, feature_updates=[
        {"feature": TV, "max_version_level": 1, "upgrade_type": 2},
        {"feature": "metadata.version", "max_version_level": 26, "upgrade_type": 1}])
    assert (r.error_code, r.results) == (E.invalid_update_version, ())
    assert r.error_message.startswith("The update failed for all features since the following feature had an "
                                      "error: Invalid update version 26 for feature metadata.version.")
    twice = await call(state, ApiKey.UPDATE_FEATURES, 1, timeout=1000, validate_only=False, feature_updates=[
        {"feature": TV, "max_version_level": 1, "upgrade_type": 2},
        {"feature": TV, "max_version_level": 0, "upgrade_type": 2}])
    assert twice.error_code is E.invalid_request
    assert (await finalized(state))[0][TV] == 2
