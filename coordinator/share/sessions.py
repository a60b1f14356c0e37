"""Share sessions (KIP-932; Kafka's ShareSessionCache), pure.

A member's ShareFetch at epoch 0 opens its session on this broker with the partitions it names;
each later ShareFetch or ShareAcknowledge carries the next epoch (1, 2, ..., wrapping to 1) and may
add partitions or forget some; epoch -1 closes the session, after its acknowledgements are done.
An epoch other than the expected one is INVALID_SHARE_SESSION_EPOCH, a session this broker does
not have SHARE_SESSION_NOT_FOUND; past group.share.max.share.sessions a new one is
SHARE_SESSION_LIMIT_REACHED. The session's partitions are what its fetches read. A session ends
too when the connection that opened it closes (Kafka's ShareSessionCache connection listener).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

__all__ = ("FINAL_EPOCH", "INITIAL_EPOCH", "ShareSession", "ShareSessionCache", "connection_id")

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
_MAX_EPOCH: Final = (1 << 31) - 1

# (topic id, partition) -> the topic partition it names
SessionPartitions = dict[tuple[uuid.UUID, int], TopicPartition]


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the epoch its next request must carry
    partitions: SessionPartitions = field(default_factory=dict)
    connection: str = ""  # the connection that opened it ("": none known)

    def update(self, added: SessionPartitions, forgotten: Iterable[tuple[uuid.UUID, int]]) -> None:
        self.partitions.update(added)
        for key in forgotten:
            self.partitions.pop(key, None)


def connection_id(listener_name: str, peer: str) -> str:
    """A client connection's name among those open ("": unknown, no session is tied to it)."""
    return "" if peer == "?" else f"{listener_name}/{peer}"


class ShareSessionCache:
    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def open(self, group_id: str, member_id: str, connection: str = "") -> tuple[ShareSession, ShareSession | None]:
        """A new session at epoch 0, and the one it replaces (its records go back)."""
        key = (group_id, member_id)
        previous = self._sessions.pop(key, None)
        if len(self._sessions) >= self.max_sessions:
            if previous is not None:
                self._sessions[key] = previous
            raise KafkaError(ErrorCode.share_session_limit_reached,
                             f"The share session cache is full ({self.max_sessions} sessions).")
        session = self._sessions[key] = ShareSession(group_id, member_id, connection=connection)
        return session, previous

    def end_connection(self, connection: str) -> list[ShareSession]:
        """The sessions the connection opened, ended."""
        ended = [s for s in self._sessions.values() if connection and s.connection == connection]
        for session in ended:
            del self._sessions[(session.group_id, session.member_id)]
        return ended

    def for_fetch(self, group_id: str, member_id: str, epoch: int, acks: bool, connection: str,
                  ) -> tuple[ShareSession | None, ShareSession | None]:
        """The session a ShareFetch runs in (None at epoch -1: it ends), and one it replaced."""
        if epoch == INITIAL_EPOCH:
            if acks:
                raise KafkaError(ErrorCode.invalid_request, "Acknowledge data present on initial fetch request")
            return self.open(group_id, member_id, connection)
        if epoch == FINAL_EPOCH:
            if self.get(group_id, member_id) is None:
                raise KafkaError(ErrorCode.share_session_not_found,
                                 f"The share session for member {member_id} was not found.")
            return None, None
        return self.advance(group_id, member_id, epoch), None

    def advance(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a request at `epoch` (> 0) continues, moved to the next epoch."""
        session = self._find(group_id, member_id)
        if epoch != session.epoch:
            raise KafkaError(ErrorCode.invalid_share_session_epoch,
                             f"The share session epoch {epoch} is not the expected {session.epoch}.")
        session.epoch = 1 if session.epoch == _MAX_EPOCH else session.epoch + 1
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession:
        session = self._find(group_id, member_id)
        del self._sessions[(group_id, member_id)]
        return session

    def drop_member(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)

    def has_group(self, group_id: str) -> bool:
        return any(g == group_id for g, _ in self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def _find(self, group_id: str, member_id: str) -> ShareSession:
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise KafkaError(ErrorCode.share_session_not_found,
                             f"The share session for member {member_id} of group {group_id} was not found.")
        return session
