"""SASL/OAUTHBEARER with the Java clients (issue 36): kafka-clients 4.4 with Kafka's
OAuthBearerLoginCallbackHandler (client credentials against the real OIDC provider; jose4j and
jackson beside kafka-clients, the token URL allowed by the org.apache.kafka.sasl.oauthbearer.allowed.urls
system property) produce transactionally and read at read_committed under their subject's ACLs,
and another subject is refused; Kafka's CLI tools do the same with a client config file."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.broker_process import REPO, BrokerProcess
from tests.e2e.oauth_setup import new_topic, oauth_broker, oidc
from tests.e2e.test_java_clients import compile_java
from tests.kafka_tools import run_tool
from tests.oidc_provider import CLIENTS, OidcProvider, available

__all__ = ("oauth_broker", "oidc")  # the module's fixtures, from oauth_setup
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(available() is not None, reason=str(available()))]

SOURCE = Path(__file__).parent / "java" / "OAuthCheck.java"
ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
# kafka-clients 4.4 and what its OAuth login and its codecs load at run time (from `make kafka-tools`)
JARS = ("kafka-clients-4.", "slf4j-api", "zstd-jni", "lz4-java", "snappy", "jose4j", "jackson-core",
        "jackson-databind", "jackson-annotations")


def client_properties(broker: BrokerProcess, oidc: OidcProvider, path: Path, client: str | None = None) -> Path:
    """A Java client's settings for the OAUTHBEARER listener; with `client`, its credentials too."""
    lines = ["security.protocol=SASL_PLAINTEXT", "sasl.mechanism=OAUTHBEARER",
             "sasl.login.callback.handler.class="
             "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
             "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
             f"sasl.oauthbearer.token.endpoint.url={oidc.token_url}", "sasl.oauthbearer.scope=kafka"]
    if client is not None:
        lines += [f"sasl.oauthbearer.client.credentials.client.id={client}",
                  f"sasl.oauthbearer.client.credentials.client.secret={CLIENTS[client][0]}"]
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    tools = REPO / "tools" / "kafka-tools"
    jars = sorted(j for j in tools.glob("*.jar") if j.name.startswith(JARS))
    assert any(j.name.startswith("jose4j") for j in jars), "make kafka-tools brings jose4j"
    return compile_java(tmp_path_factory.mktemp("oauth-java"), SOURCE, jars, "-nowarn")


def _oauth_check(broker: BrokerProcess, oidc: OidcProvider, cp: str, props: Path, *args: str) -> dict[str, str]:
    proc = subprocess.run(["java", f"-D{ALLOWED_URLS}={oidc.token_url}", "-cp", cp, "OAuthCheck",
                           broker.bootstrap_of("SASL_PLAINTEXT"), *args],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, CHECK_CLIENT_CONFIG=str(props)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))


def test_java_clients_log_in_by_client_credentials_under_acls(oauth_broker: BrokerProcess, oidc: OidcProvider,
                                                              compiled: str, tmp_path: Path) -> None:
    topic = new_topic(oauth_broker, "User:carol")
    props = client_properties(oauth_broker, oidc, tmp_path / "client.properties")
    checks = _oauth_check(oauth_broker, oidc, compiled, props, topic, "carol", CLIENTS["carol"][0], "nobody",
                          CLIENTS["nobody"][0])
    assert checks == {"read_committed": "3", "stranger": "TransactionalIdAuthorizationException"}


def test_java_clients_reauthenticate_with_fresh_tokens(oauth_broker: BrokerProcess, oidc: OidcProvider,
                                                       compiled: str, tmp_path: Path) -> None:
    """Kafka's own client against 8 s tokens for 20 s: its login refreshes the token, it
    re-authenticates on the same connection before the session (the token's lifetime) ends, no
    session is ended by the broker, and every record arrives."""
    topic = new_topic(oauth_broker, "User:shortlived")
    props = client_properties(oauth_broker, oidc, tmp_path / "client.properties")
    before = len(oauth_broker.log_lines)
    checks = _oauth_check(oauth_broker, oidc, compiled, props, topic, "shortlived", CLIENTS["shortlived"][0],
                          "nobody", CLIENTS["nobody"][0], "reauth", "20")
    assert int(checks["sent"]) > 20 and checks["read"] == checks["sent"], checks
    assert not any("SASL session of User:shortlived expired" in line for line in oauth_broker.log_lines[before:])


def _tool(broker: BrokerProcess, oidc: OidcProvider, name: str, config: Path, *args: str,
          input: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_tool(name, "--bootstrap-server", broker.bootstrap_of("SASL_PLAINTEXT"), *args, input=input,
                    java_options=(f"-D{ALLOWED_URLS}={oidc.token_url}",))


def test_kafka_cli_tools_with_a_client_config_file(oauth_broker: BrokerProcess, oidc: OidcProvider,
                                                   tmp_path: Path) -> None:
    """The console producer (idempotent: Kafka's CLI has no transactional producer that takes a
    client config) and the console consumer at read_committed, as dave; kafka-topics lists what
    dave may describe, and nobody's producer is refused by the ACLs."""
    topic = new_topic(oauth_broker, "User:dave")
    dave = client_properties(oauth_broker, oidc, tmp_path / "dave.properties", "dave")
    produced = _tool(oauth_broker, oidc, "kafka-console-producer", dave, "--command-config", str(dave),
                     "--topic", topic, "--producer-property", "enable.idempotence=true", input="one\ntwo\n")
    assert produced.returncode == 0, produced.stdout + produced.stderr
    consumed = _tool(oauth_broker, oidc, "kafka-console-consumer", dave, "--command-config", str(dave),
                     "--topic", topic, "--group", f"g-{topic}", "--from-beginning", "--max-messages", "2",
                     "--isolation-level", "read_committed")
    assert sorted(consumed.stdout.split()) == ["one", "two"], consumed.stdout + consumed.stderr
    listed = _tool(oauth_broker, oidc, "kafka-topics", dave, "--command-config", str(dave), "--list")
    assert listed.stdout.split() == [topic], listed.stdout + listed.stderr
    nobody = client_properties(oauth_broker, oidc, tmp_path / "nobody.properties", "nobody")
    refused = _tool(oauth_broker, oidc, "kafka-console-producer", nobody, "--command-config", str(nobody),
                    "--topic", topic, "--producer-property", "max.block.ms=15000", input="three\n")
    assert "TopicAuthorizationException" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
