import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { generateKeyPairSync, sign } from 'node:crypto';
import { createJwksVerifier, jwksPublicKeys } from '@hookd/webhooks';

// A sender: an Ed25519 key pair, its JWK, and a signed message.
function sender() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = { ...publicKey.export({ format: 'jwk' }), use: 'sig', alg: 'EdDSA', kid: 'k', endpoint_id: 'ep_1' };
  const message = (id, body) => {
    const ts = Math.floor(Date.now() / 1000);
    const sig = sign(null, Buffer.from(`${id}.${ts}.${body}`), privateKey).toString('base64');
    return { body, headers: { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1a,${sig}` } };
  };
  return { jwk, message };
}

// serve answers GET with the current set and counts the fetches.
async function serve(set) {
  const state = { set, fetches: 0 };
  const server = createServer((req, res) => {
    state.fetches++;
    res.writeHead(200, { 'content-type': 'application/jwk-set+json' });
    res.end(JSON.stringify(state.set));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${server.address().port}/jwks.json`;
  state.close = () => new Promise((resolve) => server.close(resolve));
  return state;
}

const body = JSON.stringify({ id: 'evt_1', type: 't', subject: 's', occurred_at: '2026-01-01T00:00:00Z', data: {} });

test('verifies against a JWKS, caches it, and refetches once for a rotated key', async () => {
  const oldKey = sender();
  const newKey = sender();
  const jwks = await serve({ keys: [oldKey.jwk] });
  try {
    const verify = createJwksVerifier({ url: jwks.url, minRefetchSeconds: 0 });
    for (let i = 0; i < 5; i++) await verify(oldKey.message('msg_' + i, body).body, oldKey.message('msg_' + i, body).headers);
    assert.equal(jwks.fetches, 1, 'the set is fetched once and cached');
    jwks.set = { keys: [newKey.jwk, oldKey.jwk] };
    const m = newKey.message('msg_new', body);
    assert.equal((await verify(m.body, m.headers)).id, 'evt_1');
    assert.equal(jwks.fetches, 2, 'an unknown signature refetched the set once');
    const forged = oldKey.message('msg_x', body);
    await assert.rejects(verify(body.replace('evt_1', 'evt_2'), forged.headers), { code: 'no_matching_signature' });
  } finally {
    await jwks.close();
  }
});

test('jwksPublicKeys takes Ed25519 signing keys only, of one endpoint when asked', () => {
  const a = sender().jwk;
  const set = { keys: [a, { kty: 'RSA', n: 'x', e: 'AQAB' }, { ...a, use: 'enc' }, { ...a, endpoint_id: 'ep_2' }] };
  assert.equal(jwksPublicKeys(set).length, 2);
  assert.equal(jwksPublicKeys(set, 'ep_1').length, 1);
  assert.match(jwksPublicKeys(set, 'ep_1')[0], /^whpk_/);
  assert.throws(() => jwksPublicKeys({}), TypeError);
});
