// Seed 002's TypeScript receiver example ("使用 TypeScript SDK 验签"), run for
// real: a node:http server on 127.0.0.1, port 0, receiving requests signed by
// signKwork. Bounded: every request has a timeout and the server is closed.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { signKwork } from '@hookd/webhooks';

// ---- transcription of the seed example ------------------------------------
// Changes: TypeScript annotations dropped; '@21stware/raise-sdk' ->
// '@hookd/webhooks'; the secret and console are parameters (the seed reads
// process.env.WEBHOOK_SECRET and logs to the real console); listen(3000) is
// done by the test on 127.0.0.1:0.
import { webhooks } from '@hookd/webhooks';

function createSeedServer(secret, console) {
  const server = http.createServer(async (req, res) => {
    if (req.method === 'POST' && req.url === '/webhooks') {
      const chunks = [];
      for await (const chunk of req) {
        chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      }
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const signature = req.headers['x-kwork-signature'];

      try {
        const event = await webhooks.verify(rawBody, signature, secret, 300);
        console.log('接收到事件:', event.type, event.id);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ received: true }));
      } catch (err) {
        console.error('签名校验失败:', err);
        res.writeHead(401, { 'Content-Type': 'text/plain' });
        res.end('Invalid signature');
      }
    } else {
      res.writeHead(404).end();
    }
  });
  return server;
}
// ---- end of transcription ---------------------------------------------------

const SECRET = 'whsec_kwork_seed_example_secret';

function send(port, { method = 'POST', path = '/webhooks', headers = {}, chunks = [] }) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path, headers: { connection: 'close', ...headers }, agent: false, signal: AbortSignal.timeout(5000) },
      (res) => {
        const parts = [];
        res.on('data', (c) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe('seed 002 TypeScript receiver example', { timeout: 20_000 }, () => {
  const logs = [];
  const fakeConsole = {
    log: (...args) => logs.push(['log', ...args]),
    error: (...args) => logs.push(['error', ...args]),
  };
  let server;
  let port;

  before(async () => {
    server = createSeedServer(SECRET, fakeConsole);
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    port = server.address().port;
  });

  after(async () => {
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  });

  const event = {
    id: 'evt_01JBCDEF0123456789ABCDEF01',
    type: 'app.installed',
    createdAt: new Date().toISOString(),
    apiVersion: '2026-10-28',
    tenant: 'acme_corp',
    environment: 'live',
    app: 'shop-sync',
    data: { version: '1.0.0', scopes: ['tables.base:read', 'platform:ping'], note: '中文 ✓' },
  };
  const body = JSON.stringify(event);

  function kworkHeaders(signature) {
    return {
      'content-type': 'application/json',
      'x-kwork-event': event.type,
      'x-kwork-delivery': 'dlv_01',
      ...(signature === undefined ? {} : { 'x-kwork-signature': signature }),
    };
  }

  test('a request signed by signKwork is accepted (body split mid-character across chunks)', async () => {
    const signature = await signKwork(SECRET, Math.floor(Date.now() / 1000), body);
    const bytes = Buffer.from(body, 'utf8');
    const cut = bytes.indexOf(Buffer.from('中', 'utf8')) + 1; // inside the 3-byte character
    const res = await send(port, { headers: kworkHeaders(signature), chunks: [bytes.subarray(0, cut), bytes.subarray(cut)] });
    assert.equal(res.status, 200);
    assert.equal(res.type, 'application/json');
    assert.deepEqual(JSON.parse(res.body), { received: true });
    assert.deepEqual(logs.at(-1), ['log', '接收到事件:', 'app.installed', event.id]);
  });

  test('a tampered body is refused with 401', async () => {
    const signature = await signKwork(SECRET, Math.floor(Date.now() / 1000), body);
    const res = await send(port, { headers: kworkHeaders(signature), chunks: [body.replace('"live"', '"test"')] });
    assert.equal(res.status, 401);
    assert.equal(res.body, 'Invalid signature');
    assert.equal(logs.at(-1)[0], 'error');
    assert.equal(logs.at(-1)[2].code, 'no_matching_signature');
  });

  test('another secret, a stale timestamp and a missing header are refused', async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const [signature, code] of [
      [await signKwork('another secret', now, body), 'no_matching_signature'],
      [await signKwork(SECRET, now - 301, body), 'timestamp_too_old'],
      [undefined, 'missing_header'],
    ]) {
      const res = await send(port, { headers: kworkHeaders(signature), chunks: [body] });
      assert.equal(res.status, 401);
      assert.equal(logs.at(-1)[2].code, code);
    }
  });

  test('other routes get 404', async () => {
    assert.equal((await send(port, { method: 'GET' })).status, 404);
    assert.equal((await send(port, { path: '/other', chunks: [body] })).status, 404);
  });
});
