"""The verification keys of SASL/OAUTHBEARER: the JWKS at `sasl.oauthbearer.jwks.endpoint.url`, kept
as Kafka's RefreshingHttpsJwks keeps it.

- Fetched before the listeners serve (a broker whose JWKS cannot be had after the retries does not
  start), then again every `sasl.oauthbearer.jwks.endpoint.refresh.ms`; a failed refresh is retried
  with `...retry.backoff.ms` doubling up to `...retry.backoff.max.ms`, and keeps the keys it had.
- A token whose `kid` is not among the keys fails that login and starts a refresh at once, at most
  one per key id every MISSING_KID_WAIT_S (Kafka's MISSING_KEY_ID_CACHE_IN_FLIGHT_MS), for at most
  MISSING_KID_ENTRIES key ids, so a client sending made-up key ids cannot hammer the provider.
- The HTTP(S) request runs in a worker thread (urllib), never on the event loop. HTTPS trusts the
  system's CAs, or the `ssl.truststore.*` options of the listener's OAUTHBEARER JAAS config, as
  Kafka's JaasOptionsUtils reads them (oauthbearer.jaas_ssl_context).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import ssl
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

import jwt

__all__ = ("MISSING_KID_ENTRIES", "MISSING_KID_WAIT_S", "JwksCache", "JwksError", "http_get_json")

log = logging.getLogger("broker.security")

MISSING_KID_WAIT_S: Final = 60.0
MISSING_KID_ENTRIES: Final = 16
_MAX_KID_LENGTH: Final = 1000
_HTTP_TIMEOUT_S: Final = 10.0


class JwksError(Exception):
    """The JWKS could not be fetched or read."""


def http_get_json(url: str, context: ssl.SSLContext | None = None) -> object:
    """A JSON document, checked by parse_jwks."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S, context=context) as answer:  # noqa: S310
        return json.loads(answer.read())


def parse_jwks(document: object) -> dict[str, jwt.PyJWK]:
    """kid -> key of the signing keys of a JWKS document; keys PyJWT cannot use are skipped."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksError("the JWKS document has no \"keys\" array")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(entry)
        except (jwt.PyJWKError, jwt.InvalidKeyError):
            continue
        keys[str(entry.get("kid", ""))] = key
    return keys


class JwksCache:
    def __init__(self, url: str, refresh_ms: int, backoff_ms: int, backoff_max_ms: int,
                 fetch: Callable[[str], object] | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        self.url = url
        self._refresh_s = refresh_ms / 1000
        self._backoff_s = max(backoff_ms, 1) / 1000
        self._backoff_max_s = max(backoff_max_ms, backoff_ms) / 1000
        self._fetch = fetch or functools.partial(http_get_json, context=ssl_context)
        self.keys: dict[str, jwt.PyJWK] = {}
        self._missing: OrderedDict[str, float] = OrderedDict()  # kid -> when it may expedite a refresh again
        self._expedited: asyncio.Task[None] | None = None

    async def refresh(self) -> None:
        """Fetch the JWKS now; JwksError when it cannot be had."""
        try:
            document = await asyncio.to_thread(self._fetch, self.url)
        except (OSError, ValueError) as exc:
            raise JwksError(f"could not fetch the JWKS from {self.url}: {exc}") from None
        keys = parse_jwks(document)
        if keys.keys() != self.keys.keys():
            log.info("JWKS from %s: key ids %s", self.url, ", ".join(sorted(keys)) or "(none)")
        self.keys = keys
        for kid in keys:
            self._missing.pop(kid, None)

    async def refresh_with_retry(self) -> None:
        """Refresh, retrying with doubling back-off until retry.backoff.max.ms is spent (Kafka's Retry:
        the last wait is cut to what is left)."""
        attempt, waited = 0, 0.0
        while True:
            try:
                await self.refresh()
                return
            except JwksError:
                delay = min(self._backoff_s * 2 ** attempt, self._backoff_max_s - waited)
                if delay <= 0:
                    raise
            await asyncio.sleep(delay)
            attempt, waited = attempt + 1, waited + delay

    async def run(self) -> None:
        """Refresh every refresh.ms until cancelled; a failure keeps the keys there were."""
        while True:
            await asyncio.sleep(self._refresh_s)
            try:
                await self.refresh_with_retry()
            except JwksError as exc:
                log.warning("JWKS refresh failed, keeping the %d keys fetched before: %s", len(self.keys), exc)

    def key_for(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None:  # no kid: the only key there is, as jose4j's selector would pick it
            return next(iter(self.keys.values())) if len(self.keys) == 1 else None
        return self.keys.get(kid)

    def missing(self, kid: str | None) -> bool:
        """A token named a key that is not here: refresh now unless this kid did within the wait.
        True when a refresh was started."""
        kid = kid or ""
        if len(kid) > _MAX_KID_LENGTH:
            return False
        now = time.monotonic()
        if self._missing.get(kid, 0.0) > now:
            return False
        self._missing[kid] = now + MISSING_KID_WAIT_S
        self._missing.move_to_end(kid)
        while len(self._missing) > MISSING_KID_ENTRIES:
            self._missing.popitem(last=False)
        if self._expedited is None or self._expedited.done():
            self._expedited = asyncio.get_running_loop().create_task(self._expedite(), name="jwks-refresh")
        return True

    async def _expedite(self) -> None:
        try:
            await self.refresh()
        except JwksError as exc:
            log.warning("JWKS refresh for an unknown key id failed: %s", exc)
