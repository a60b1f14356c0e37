"""DescribeLogDirs requests v1-5 as kio reads them, for broker/handlers/describe_log_dirs.py."""

from typing import TypeAlias

from kio.schema.describe_log_dirs.v1 import request as v1
from kio.schema.describe_log_dirs.v2 import request as v2
from kio.schema.describe_log_dirs.v3 import request as v3
from kio.schema.describe_log_dirs.v4 import request as v4
from kio.schema.describe_log_dirs.v5 import request as v5

__all__ = ("DescribableLogDirTopic", "DescribeLogDirsRequest")

DescribableLogDirTopic: TypeAlias = (
    v1.DescribableLogDirTopic | v2.DescribableLogDirTopic | v3.DescribableLogDirTopic | v4.DescribableLogDirTopic
    | v5.DescribableLogDirTopic
)
DescribeLogDirsRequest: TypeAlias = (
    v1.DescribeLogDirsRequest | v2.DescribeLogDirsRequest | v3.DescribeLogDirsRequest | v4.DescribeLogDirsRequest
    | v5.DescribeLogDirsRequest
)
