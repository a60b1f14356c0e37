"""How transactions ended, counted as the coordinator decides them (for the broker's metrics).

A transaction is counted when its PREPARE_COMMIT or PREPARE_ABORT is persisted: that is the
decision, and the moment EndTxn answers the client. Markers of a decision taken before a restart
are not counted again by the process that resumes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ("AbortCause", "TxnOutcomes")


class AbortCause(Enum):
    CLIENT = "client"    # EndTxn(abort) from the producer
    TIMEOUT = "timeout"  # transaction.timeout.ms passed; the coordinator aborted it
    FENCING = "fencing"  # InitProducerId of a new producer instance aborted the old one's
    ADMIN = "admin"      # an operator's WriteTxnMarkers (kafka-transactions abort)


@dataclass(slots=True)
class TxnOutcomes:
    committed: int = 0
    aborted: dict[AbortCause, int] = field(default_factory=lambda: dict.fromkeys(AbortCause, 0))

    def record(self, commit: bool, cause: AbortCause = AbortCause.CLIENT) -> None:
        if commit:
            self.committed += 1
        else:
            self.aborted[cause] += 1
