// A real OpenID provider (npm `oidc-provider`, installed by scripts/setup.d/60-oidc-provider.sh)
// on 127.0.0.1, configured the way an MCP authorization server is: dynamic client registration,
// client credentials, PKCE, resource indicators (RFC 8707) with the scopes `mcp:tools` and `mcp:admin`,
// refresh tokens, revocation,
// introspection for the resource server, RFC 9207 `iss` in redirects.
//
// Usage: node oidc_provider.mjs OIDC_PROVIDER_DIR [--port N] [--access-ttl SECONDS]
// Prints `LISTENING http://127.0.0.1:PORT` when ready; exits when stdin closes.
//
// There is no person in a test, so the login and consent screens approve at once: the interaction
// URL finishes the login as `rkmcp-test-user` and grants what was asked. Everything else (codes,
// PKCE, tokens, refresh, revocation) is the provider's own.
import { pathToFileURL } from 'node:url';
import net from 'node:net';

const [dir, ...rest] = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = rest.indexOf(name);
  return i >= 0 ? rest[i + 1] : dflt;
};
const { default: Provider } = await import(
  pathToFileURL(`${dir}/node_modules/oidc-provider/lib/index.js`).href
);

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const port = Number(opt('--port', '0')) || (await freePort());
const accessTtl = Number(opt('--access-ttl', '3600'));
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'mcp-resource-server',
      client_secret: 'resource-server-secret',
      grant_types: [],
      response_types: [],
      redirect_uris: [],
    },
    // Machine clients for the client credentials grant, one per token endpoint auth method.
    {
      client_id: 'rkmcp-machine-basic',
      client_secret: 'machine-basic-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      client_id: 'rkmcp-machine-post',
      client_secret: 'machine-post-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  cookies: { keys: ['rkmcp-test-cookie-key'] },
  scopes: ['openid', 'offline_access', 'mcp:tools', 'mcp:admin'],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf ?? undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: 'mcp:tools mcp:admin',
        audience: resource,
        accessTokenTTL: accessTtl,
        accessTokenFormat: 'opaque',
      }),
    },
  },
  issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: { AccessToken: accessTtl },
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
});
provider.proxy = false;

provider.on('grant.success', (ctx) => {
  console.error(`grant.success ${ctx.oidc.params.grant_type}`);
});
// oidc-provider has no success event for revocation: revoking a refresh token revokes its grant.
provider.on('grant.revoked', () => console.error('grant.revoked'));
provider.on('revocation.error', (ctx, err) => console.error(`revocation.error ${err.message}`));

// Every client that makes a request, so a test can tell which clients reached this provider.
provider.use(async (ctx, next) => {
  await next();
  const id = ctx.oidc?.client?.clientId ?? ctx.oidc?.params?.client_id;
  if (id) console.error(`client ${id} ${ctx.method} ${ctx.path}`);
});

// The person who approves everything.
provider.use(async (ctx, next) => {
  const m = ctx.path.match(/^\/interaction\/([^/]+)$/);
  if (!m || ctx.method !== 'GET') return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params, session } = details;
  ctx.respond = false;
  if (prompt.name === 'login') {
    await provider.interactionFinished(
      ctx.req,
      ctx.res,
      { login: { accountId: 'rkmcp-test-user' } },
      { mergeWithLastSubmission: false },
    );
    return undefined;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const d = prompt.details;
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(
    ctx.req,
    ctx.res,
    { consent: { grantId } },
    { mergeWithLastSubmission: true },
  );
  return undefined;
});

const server = provider.listen(port, '127.0.0.1', () => {
  console.log(`LISTENING ${issuer}`);
});
process.stdin.resume();
process.stdin.on('end', () => {
  server.close();
  process.exit(0);
});
