"""The one exception type domain code raises: a Kafka error code plus a human message."""

from kio.schema.errors import ErrorCode

__all__ = ("ErrorCode", "KafkaError", "CorruptRecordError", "FrameBoundsError")


class KafkaError(Exception):
    """Carries the ErrorCode a response should hold and the message to put in error_message."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"KafkaError({self.code.name}, {self.message!r})"


class FrameBoundsError(KafkaError):
    """A length or count in a request frame reaches past the bytes that remain."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.invalid_request, message)


class CorruptRecordError(KafkaError):
    """Bytes that do not form a valid record batch (bad length, magic or CRC)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.corrupt_message, message)


class RecordValidationError(KafkaError):
    """Kafka's RecordValidationException: a batch refused for some of its records, named by their
    index in the batch so that a client (KIP-467, Produce v8+ record_errors) fails only those and
    sends the others again."""

    def __init__(self, code: ErrorCode, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors
