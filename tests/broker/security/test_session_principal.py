"""The principal each connection carries (broker/principal.py), seen inside a real Broker on this
test's event loop: an mTLS client is User:<its subject as Java writes it>, a TLS client without a
certificate and a PLAINTEXT client are User:ANONYMOUS, and a SASL client is User:<its name> once
authenticated, over SaslHandshake v1 (SaslAuthenticate) and v0 (raw tokens) alike."""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from broker.config import build_config
from broker.principal import ANONYMOUS, KafkaPrincipal, Session
from broker.server import Broker
from tests.kafka_wire import decode_response, encode_request, frame
from tests.tls_certs import CLIENT_SUBJECT, TlsFiles

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


@pytest.fixture
async def broker(tmp_path: Path, tls_files: TlsFiles) -> AsyncIterator[Broker]:
    props = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
             "log.dirs": str(tmp_path / "data"), "offsets.topic.num.partitions": "1",
             "transaction.state.log.num.partitions": "1", "sasl.enabled.mechanisms": "PLAIN",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
             } | tls_files.broker_settings(client_auth="requested")
    config, _ = build_config(props)
    broker = Broker(config)
    await broker.start()
    yield broker
    await broker.stop()


def _port(broker: Broker, name: str) -> int:
    return next(li.port for li in broker.config.client_listeners if li.name == name)


async def _request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, entity: Any) -> Any:
    writer.write(frame(encode_request(entity, 1)))
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return decode_response(await reader.readexactly(size), entity.__api_key__, entity.__version__)[1]


async def _session_after(broker: Broker, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Session:
    versions = await _request(reader, writer, ApiVersionsRequest(client_software_name="t",
                                                                 client_software_version="1"))
    assert versions.error_code == 0
    local_port = writer.get_extra_info("sockname")[1]
    (conn,) = [c for c in broker.connections if c.peer.endswith(f":{local_port}")]
    return conn.session


def _client_context(tls: TlsFiles, cert: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(tls.ca))
    if cert:
        context.load_cert_chain(str(tls.client_cert), str(tls.client_key))
    return context


@pytest.mark.parametrize(("listener", "cert", "expected"), [
    ("SSL", True, KafkaPrincipal("User", CLIENT_SUBJECT)),
    ("SSL", False, ANONYMOUS),
    ("PLAINTEXT", False, ANONYMOUS),
])
async def test_tls_and_plaintext_principals(broker: Broker, tls_files: TlsFiles, listener: str, cert: bool,
                                            expected: KafkaPrincipal) -> None:
    context = _client_context(tls_files, cert) if listener == "SSL" else None
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(broker, listener), ssl=context)
    session = await _session_after(broker, reader, writer)
    assert (session.principal, session.listener_name, session.security_protocol, session.client_host) == (
        expected, listener, listener, "127.0.0.1")
    assert str(session.principal) == f"User:{expected.name}"
    writer.close()


async def test_sasl_principal_over_handshake_v1_and_v0(broker: Broker) -> None:
    port = _port(broker, "SASL_PLAINTEXT")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert (await _session_after(broker, reader, writer)).principal == ANONYMOUS  # not yet authenticated
    assert (await _request(reader, writer, SaslHandshakeRequest(mechanism="PLAIN"))).mechanisms == ("PLAIN",)
    done = await _request(reader, writer, SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"))
    assert done.error_code == 0
    assert (await _session_after(broker, reader, writer)).principal == KafkaPrincipal("User", "alice")
    writer.close()

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert (await _request(reader, writer, SaslHandshakeV0(mechanism="PLAIN"))).error_code == 0
    writer.write(frame(b"\0alice\0alice-secret"))  # v0: the token itself, no Kafka header
    assert await reader.readexactly(4) == b"\0\0\0\0"  # PLAIN's empty answer, size-prefixed
    assert (await _session_after(broker, reader, writer)).principal == KafkaPrincipal("User", "alice")
    writer.close()


async def test_reauthentication_kip_368(tmp_path: Path, tls_files: TlsFiles) -> None:
    props = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
             "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
             "sasl.enabled.mechanisms": "PLAIN", "connections.max.reauth.ms": "60000",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                 JAAS.replace(";", ' user_bob="bob-secret";')}
    broker = Broker(build_config(props)[0])
    await broker.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        await _request(reader, writer, SaslHandshakeRequest(mechanism="PLAIN"))
        done = await _request(reader, writer, SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"))
        assert done.session_lifetime.total_seconds() == 60  # v1+: the client must re-authenticate by then
        session = await _session_after(broker, reader, writer)
        (conn,) = broker.connections
        # Re-authentication on the same connection: same mechanism, same principal.
        assert (await _request(reader, writer, SaslHandshakeRequest(mechanism="PLAIN"))).error_code == 0
        again = await _request(reader, writer, SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"))
        assert again.error_code == 0 and (await _session_after(broker, reader, writer)) == session
        # A session that ends without re-authentication closes the connection at the next request.
        assert conn.gate.sasl is not None
        conn.gate.sasl.session_expires = 0.0
        writer.write(frame(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                                          2)))
        assert await reader.read() == b""
        writer.close()
        # Another principal cannot take over a connection by re-authenticating.
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        await _request(reader, writer, SaslHandshakeRequest(mechanism="PLAIN"))
        await _request(reader, writer, SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"))
        await _request(reader, writer, SaslHandshakeRequest(mechanism="PLAIN"))
        other = await _request(reader, writer, SaslAuthenticateRequest(auth_bytes=b"\0bob\0bob-secret"))
        assert other.error_code == 58 and "Cannot change principals" in other.error_message
        assert await reader.read() == b""
        writer.close()
    finally:
        await broker.stop()
