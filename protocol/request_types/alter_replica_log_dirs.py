"""AlterReplicaLogDirs requests v1-2 as kio reads them, for broker/handlers/alter_replica_log_dirs.py."""

from typing import TypeAlias

from kio.schema.alter_replica_log_dirs.v1 import request as v1
from kio.schema.alter_replica_log_dirs.v2 import request as v2

__all__ = ("AlterReplicaLogDirTopic", "AlterReplicaLogDir", "AlterReplicaLogDirsRequest")

AlterReplicaLogDirTopic: TypeAlias = v1.AlterReplicaLogDirTopic | v2.AlterReplicaLogDirTopic
AlterReplicaLogDir: TypeAlias = v1.AlterReplicaLogDir | v2.AlterReplicaLogDir
AlterReplicaLogDirsRequest: TypeAlias = v1.AlterReplicaLogDirsRequest | v2.AlterReplicaLogDirsRequest
