"""Share groups (KIP-932) on three brokers with their record data, __share_group_state and
__consumer_offsets included, in a real S3 server: the cluster suite's case run again here
(imported below). The group coordinator initializes the share-partition at its share coordinator
before assigning it; after a kill -9 of the share coordinator's broker with records in flight, the
next one replays the state from the objects: no acknowledged record comes back and every acquired
but unacknowledged one does, with its delivery count."""

from __future__ import annotations

import pytest

from tests.e2e.cluster.test_cluster_share_groups import (  # noqa: F401  (run here over objects)
    test_share_group_survives_the_loss_of_its_share_coordinator,
)

pytestmark = pytest.mark.e2e
