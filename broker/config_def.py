"""Kafka's ConfigDef entries for broker properties: a property's type and validator, and its parsing.

The kinds and messages are Kafka's (ConfigDef.Type, ConfigDef.Range, ValidString.in, ConfigException),
so a value Kafka would refuse is refused here with the words operators search for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, TypeVar

__all__ = ("BOOLEAN", "DOUBLE", "HOUR_MS", "INT", "LONG", "PASSWORD", "STRING", "WEEK_MS", "ConfigError", "FieldValues",
           "Parsed", "Spec", "prop")

T = TypeVar("T")
# A property's value as Spec.parse gives it, by its kind.
Parsed: TypeAlias = bool | int | float | str
# BrokerConfig field name -> a value of that field's type: which type depends on the name, which no
# static type follows, so the values are dynamic until BrokerConfig(**values) checks them.
FieldValues: TypeAlias = dict[str, Any]

INT, LONG, BOOLEAN, STRING, DOUBLE, PASSWORD = "INT", "LONG", "BOOLEAN", "STRING", "DOUBLE", "PASSWORD"
_BOUNDS: Final = {INT: (-(1 << 31), (1 << 31) - 1), LONG: (-(1 << 63), (1 << 63) - 1)}
_INTEGER: Final = re.compile(r"^[+-]?[0-9]+$")
HOUR_MS: Final = 3_600_000
WEEK_MS: Final = 168 * HOUR_MS


class ConfigError(ValueError):
    """A property whose value does not parse or that Kafka's validators refuse."""


@dataclass(frozen=True, slots=True)
class Spec:
    """One ConfigDef entry: Kafka's type, and its validator (atLeast / between / ValidString.in)."""

    kind: str
    at_least: int | None = None
    at_most: int | None = None
    choices: tuple[str, ...] = ()

    def parse(self, key: str, raw: str) -> Parsed:
        value = raw.strip()
        if self.kind == BOOLEAN:
            if value.lower() not in ("true", "false"):
                raise _invalid(key, raw, "Expected value to be either true or false")
            return value.lower() == "true"
        if self.kind == DOUBLE:
            return self._parse_double(key, raw, value)
        if self.kind in (STRING, PASSWORD):
            if self.choices and value not in self.choices:
                raise _invalid(key, raw, f"String must be one of: {', '.join(self.choices)}")
            return value
        return self._parse_number(key, raw, value)

    def _parse_number(self, key: str, raw: str, value: str) -> int:
        low, high = _BOUNDS[self.kind]
        if not _INTEGER.match(value) or not low <= int(value) <= high:
            raise _invalid(key, raw, f"Not a number of type {self.kind}")
        number = int(value)
        # Kafka's ConfigDef.Range says the same whether or not the range has its other end.
        if self.at_least is not None and number < self.at_least:
            raise _invalid(key, raw, f"Value must be at least {self.at_least}")
        if self.at_most is not None and number > self.at_most:
            raise _invalid(key, raw, f"Value must be no more than {self.at_most}")
        return number


    def _parse_double(self, key: str, raw: str, value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise _invalid(key, raw, "Not a number of type DOUBLE") from None
        if self.at_least is not None and number < self.at_least:
            raise _invalid(key, raw, f"Value must be at least {self.at_least}")
        if self.at_most is not None and number > self.at_most:
            raise _invalid(key, raw, f"Value must be no more than {self.at_most}")
        return number


def _invalid(key: str, raw: str, why: str) -> ConfigError:
    # Kafka's ConfigException wording, which operators search for.
    return ConfigError(f"Invalid value {raw} for configuration {key}: {why}")


def prop(default: T, kind: str, *, at_least: int | None = None, at_most: int | None = None,
         choices: tuple[str, ...] = ()) -> T:
    """A BrokerConfig field set by the Kafka property of the same name (dots for underscores)."""
    return field(default=default, metadata={"kafka": Spec(kind, at_least, at_most, choices)})


