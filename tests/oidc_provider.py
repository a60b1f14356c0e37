"""A real OpenID Connect provider for the OAUTHBEARER tests: tests/oidc/provider.mjs (panva's
oidc-provider, installed by `make oidc-provider`) on the machine's Node, on an ephemeral loopback
port. It grants JWT access tokens by client credentials; `rotate()` restarts it on the same port
with a new signing key, as a provider rotates its key."""

from __future__ import annotations

import base64
import json
import select
import shutil
import ssl
import subprocess
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ("AUDIENCE", "CLIENTS", "OidcProvider", "available")

OIDC_DIR = Path(__file__).parent / "oidc"
AUDIENCE = "urn:eosbroker"
# client id (the token's sub, so the principal User:<client id>) -> (secret, token lifetime in s)
CLIENTS = {"alice": ("alice-secret", 3600), "bob": ("bob-secret", 3600), "carol": ("carol-secret", 3600),
           "dave": ("dave-secret", 3600), "erin": ("erin-secret", 3600), "nobody": ("nobody-secret", 3600),
           "shortlived": ("shortlived-secret", 8), "expiring": ("expiring-secret", 2),
           "broker": ("broker-secret", 3600),  # the brokers' own, between brokers
           "spark": ("spark-secret", 3600), "bench": ("bench-secret", 3600)}


def available() -> str | None:
    """Why the provider cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
        return "oidc-provider is not installed (make oidc-provider)"
    return None


@dataclass
class OidcProvider:
    log_path: Path
    tls_pem: Path | None = None  # serve HTTPS with this key and certificate (PEM, the key unencrypted)
    tls_ca: Path | None = None  # the CA that signed it, which the test's own requests trust
    port: int = 0
    issuer: str = ""
    kid: str = ""
    _proc: subprocess.Popen[str] | None = None

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    def start(self) -> OidcProvider:
        # Once (2026-12-07, fresh-clone CI) node printed only its version warning and never its
        # listening line, and the fixture waited out pytest's 300 s: wait 60 s, then start it again
        # once, so a hung start shows as its log rather than a timeout.
        for attempt in (1, 2):
            line = self._start_once()
            if line or attempt == 2:
                break
            self.stop()
        assert line, f"the OIDC provider did not start: {self.log_path.read_text()}"
        started = json.loads(line)
        self.issuer, self.port, self.kid = started["issuer"], started["port"], started["kid"]
        return self

    def _start_once(self) -> str:
        """The line the provider prints once listening; empty if it died or said nothing in 60 s."""
        settings = {"port": self.port, "audience": AUDIENCE,
                    "tls": {"pem": str(self.tls_pem)} if self.tls_pem else None,
                    "clients": [{"client_id": cid, "client_secret": secret, "ttl": ttl}
                                for cid, (secret, ttl) in CLIENTS.items()]}
        with self.log_path.open("a") as log:  # the child keeps its own descriptor
            self._proc = subprocess.Popen(["node", str(OIDC_DIR / "provider.mjs"), json.dumps(settings)],
                                          cwd=OIDC_DIR, stdout=subprocess.PIPE, stderr=log, text=True)
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], 60)
        return self._proc.stdout.readline() if ready else ""

    def stop(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                self._proc.wait(10)
            if self._proc.stdout is not None:
                self._proc.stdout.close()
        self._proc = None

    def rotate(self) -> str:
        """Restart with a new signing key on the same port; returns the new kid."""
        old = self.kid
        self.stop()
        self.start()
        assert self.kid != old
        return self.kid

    def token_response(self, client: str, resource: str | None = None) -> dict[str, Any]:
        """POST the client-credentials grant to the token endpoint, as a client's login does."""
        form = {"grant_type": "client_credentials", "scope": "kafka"}
        if resource is not None:
            form["resource"] = resource
        basic = base64.b64encode(f"{client}:{CLIENTS[client][0]}".encode()).decode()
        request = urllib.request.Request(self.token_url, data=urllib.parse.urlencode(form).encode(),
                                         headers={"Authorization": f"Basic {basic}"})
        context = ssl.create_default_context(cafile=str(self.tls_ca)) if self.tls_ca else None
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            result: dict[str, Any] = json.loads(answer.read())
        return result

    def token(self, client: str, resource: str | None = None) -> str:
        return str(self.token_response(client, resource)["access_token"])
