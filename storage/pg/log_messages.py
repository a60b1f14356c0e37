"""The PostgreSQL partition log's own typed messages (storage/log_messages.py has the rest)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..log_messages import LogMessage
from .cleaning import CleaningState

if TYPE_CHECKING:
    from .clean_rows import PgCleanResult

__all__ = ("ApplyCleaning", "ReadCleaningState", "Recover", "Snapshot")


@dataclass(frozen=True, slots=True)
class Recover(LogMessage[None]):
    """Re-read a stale log's state from the database (a write's outcome was unknown)."""


@dataclass(frozen=True, slots=True)
class ReadCleaningState(LogMessage[CleaningState]):
    """What a cleaning pass is planned from, taken between two commands."""


@dataclass(frozen=True, slots=True)
class Snapshot(LogMessage[None]):
    """Write a producer snapshot at the high watermark now."""


@dataclass(frozen=True, slots=True)
class ApplyCleaning(LogMessage[None]):
    """A committed pass: the rows below result.end_offset changed in the database."""

    result: PgCleanResult
