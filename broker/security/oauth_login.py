"""The broker's own OAUTHBEARER token, for logging in to the other brokers of its cluster
(sasl.mechanism.inter.broker.protocol=OAUTHBEARER), as Kafka's OAuthBearerLoginCallbackHandler gets
one: the client-credentials grant posted to `sasl.oauthbearer.token.endpoint.url` with HTTP Basic
authentication (`sasl.oauthbearer.client.credentials.client.id` / `.client.secret`, or the JAAS
options clientId / clientSecret) and `sasl.oauthbearer.scope` (or JAAS `scope`).

A token is reused until 80% of its lifetime has passed (Kafka's sasl.login.refresh.window.factor
default), then fetched again; the request runs in a worker thread, never on the event loop."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Final

from .sasl_errors import TokenFetchFailed

__all__ = ("ClientCredentials", "TokenFetchFailed")

_REFRESH_FACTOR: Final = 0.8
_HTTP_TIMEOUT_S: Final = 10.0


@dataclass(slots=True)
class ClientCredentials:
    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str | None = None
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)  # https: jaas_ssl_context's
    _token: str | None = field(default=None, repr=False)
    _renew_at: float = 0.0

    async def token(self) -> str:
        if self._token is None or time.time() >= self._renew_at:
            token, lifetime_s = await asyncio.to_thread(self._fetch)
            self._token, self._renew_at = token, time.time() + lifetime_s * _REFRESH_FACTOR
        return self._token

    def _fetch(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials"} | ({"scope": self.scope} if self.scope else {})
        # RFC 6749 2.3.1: the id and secret are form-urlencoded before Basic encoding, as Kafka does.
        pair = f"{urllib.parse.quote(self.client_id)}:{urllib.parse.quote(self.client_secret)}"
        request = urllib.request.Request(self.token_url, data=urllib.parse.urlencode(form).encode(), headers={
            "Authorization": "Basic " + base64.b64encode(pair.encode()).decode(),
            "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S, context=self.ssl_context) as answer:  # noqa: S310 (operator's URL)
                body = json.loads(answer.read())
        except (OSError, ValueError) as exc:
            raise TokenFetchFailed(f"token request to {self.token_url} as client {self.client_id!r} failed: "
                                   f"{exc}") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise TokenFetchFailed(f"the token endpoint {self.token_url} answered without an access_token")
        lifetime = body.get("expires_in")
        return token, float(lifetime) if isinstance(lifetime, int | float) and lifetime > 0 else 60.0
