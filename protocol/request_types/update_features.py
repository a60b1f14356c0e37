"""UpdateFeatures requests v0-2 as kio reads them, for broker/handlers/update_features.py."""

from typing import TypeAlias

from kio.schema.update_features.v0 import request as v0
from kio.schema.update_features.v1 import request as v1
from kio.schema.update_features.v2 import request as v2

__all__ = ("FeatureUpdateKeyV0", "FeatureUpdateKey", "UpdateFeaturesRequest")

FeatureUpdateKey: TypeAlias = v0.FeatureUpdateKey | v1.FeatureUpdateKey | v2.FeatureUpdateKey
UpdateFeaturesRequest: TypeAlias = v0.UpdateFeaturesRequest | v1.UpdateFeaturesRequest | v2.UpdateFeaturesRequest

# v0: allow_downgrade, before upgrade_type (KIP-778)
FeatureUpdateKeyV0: TypeAlias = v0.FeatureUpdateKey
