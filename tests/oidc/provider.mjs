// An OpenID Connect provider for the OAUTHBEARER tests (tests/oidc_provider.py starts it): panva's
// oidc-provider on loopback, issuing JWT access tokens (RFC 9068, typ at+jwt) by the client
// credentials grant, with the resource indicator as the audience. Each start makes a new RSA
// signing key with a new kid, so restarting on the same port rotates the provider's key.
//
// Settings come as one JSON argument: {"port": 0, "audience": "urn:...", "clients":
// [{"client_id": ..., "client_secret": ..., "ttl": seconds}], "tls": null or {"pem": path to a
// PEM file with the server's key and certificate}}. Once listening it prints one JSON line,
// {"issuer", "port", "kid"}, for the test to read.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import Provider from 'oidc-provider';

const settings = JSON.parse(process.argv[2]);
const ttls = Object.fromEntries(settings.clients.map((c) => [c.client_id, c.ttl ?? 3600]));
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const kid = randomUUID();
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };

const pem = settings.tls ? readFileSync(settings.tls.pem) : null;
const server = pem ? createTlsServer({ key: pem, cert: pem }) : createServer();
server.listen(settings.port, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `${pem ? 'https' : 'http'}://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: settings.clients.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: 'kafka',
    })),
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomUUID()] },
    scopes: ['kafka'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => settings.audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => ({
          scope: 'kafka',
          audience: resource,
          accessTokenTTL: ttls[client.clientId],
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer, port, kid })}\n`);
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
