import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { HookdClient, HookdError, OPERATIONS } from '../dist/index.js';
import { hookdBinary, startHookd, startProxy, startReceiver } from './hookd.mjs';

let hookd, receiver, proxy, client;

before(async (t) => {
  const bin = hookdBinary(t);
  if (!bin) return;
  hookd = await startHookd(bin);
  receiver = await startReceiver();
  proxy = await startProxy(hookd.url);
  client = new HookdClient({ baseUrl: hookd.url, apiKey: hookd.key });
  await client.eventTypes.put({ type: 'invoice.paid', exposure: 'webhook' });
});

after(async () => {
  await proxy?.close();
  await receiver?.close();
  await hookd?.stop();
});

function skipWithout(t) {
  if (!hookd) t.skip('no hookd (HOOKD_BIN not set)');
  return !hookd;
}

test('the client has every op of the served /openapi.json, and no other', async (t) => {
  if (skipWithout(t)) return;
  const doc = await (await fetch(`${hookd.url}/openapi.json`)).json();
  const served = Object.values(doc.paths).flatMap((ms) => Object.values(ms).map((o) => o.operationId)).sort();
  assert.deepEqual([...OPERATIONS].sort(), served);
});

test('create an endpoint, publish, and list the delivery', async (t) => {
  if (skipWithout(t)) return;
  const ep = await client.webhooks.create({ url: `${receiver.url}/hook`, event_types: ['invoice.*'] });
  assert.match(ep.id, /^ep_/);
  assert.match(ep.secret ?? '', /^whsec_/);
  const ev = await client.events.publish({ type: 'invoice.paid', subject: 'invoice://inv_1', data: { amount: 5 } });
  assert.match(ev.id, /^evt_/);
  const body = await receiver.next();
  assert.equal(body.id, ev.id);
  // The receiver has answered; hookd records the delivery right after.
  let list;
  for (let i = 0; i < 200; i++) {
    list = await client.webhooks.deliveries({ id: ep.id });
    if (list.data?.[0]?.state === 'delivered') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(list.data?.length, 1);
  assert.equal(list.data[0].event_id, ev.id);
  assert.equal(list.data[0].state, 'delivered');
  const got = await client.webhooks.get({ id: ep.id });
  assert.equal(got.secret, undefined, 'the secret is shown at creation only');
});

test('a 422 is a HookdError with code invalid, and nothing is created', async (t) => {
  if (skipWithout(t)) return;
  const before = await client.webhooks.list();
  await assert.rejects(client.webhooks.create({ url: 'ftp://example.com/x', event_types: ['invoice.*'] }), (err) => {
    assert.ok(err instanceof HookdError);
    assert.equal(err.status, 422);
    assert.equal(err.code, 'invalid');
    assert.equal(err.op, 'webhooks.create');
    assert.match(err.message, /url/i);
    return true;
  });
  assert.equal((await client.webhooks.list()).data?.length, before.data?.length);
  await assert.rejects(client.events.get({ id: 'evt_01J0000000000000000000000' }), (err) => err instanceof HookdError && err.code === 'not_found' && err.status === 404);
});

test('a 429 with Retry-After is retried, with the same idempotency key', async (t) => {
  if (skipWithout(t)) return;
  const c = new HookdClient({ baseUrl: proxy.url, apiKey: hookd.key });
  proxy.seen.length = 0;
  proxy.throttle(1, '1');
  const ev = await c.events.publish({ type: 'invoice.paid', data: { n: 1 } });
  const posts = proxy.seen.filter((r) => r.method === 'POST');
  assert.equal(posts.length, 2, 'one 429, then the retry');
  assert.ok(posts[0].key, 'the publish carries an idempotency key');
  assert.equal(posts[0].key, posts[1].key);
  assert.equal((await client.events.get({ id: ev.id })).id, ev.id);
});

test('a Retry-After over maxWaitMs is not waited for', async (t) => {
  if (skipWithout(t)) return;
  const c = new HookdClient({ baseUrl: proxy.url, apiKey: hookd.key, retry: { maxWaitMs: 1000 } });
  proxy.seen.length = 0;
  proxy.throttle(1, '120');
  await assert.rejects(c.events.publish({ type: 'invoice.paid' }), (err) => err instanceof HookdError && err.status === 429 && err.retryAfterMs === 120_000);
  assert.equal(proxy.seen.length, 1);
});

test('a 503 with Retry-After is retried', async (t) => {
  if (skipWithout(t)) return;
  const c = new HookdClient({ baseUrl: proxy.url, apiKey: hookd.key });
  proxy.seen.length = 0;
  proxy.throttle(1, '0', 503);
  await c.webhooks.list();
  assert.equal(proxy.seen.length, 2);
});

test('an operator key acts on the owner withOwner names', async (t) => {
  if (skipWithout(t)) return;
  const op = new HookdClient({ baseUrl: hookd.url, apiKey: hookd.newKey('--role', 'operator') });
  await assert.rejects(op.webhooks.list(), (err) => err instanceof HookdError && err.code === 'invalid');
  const mine = await client.webhooks.list();
  const theirs = await op.withOwner('acme').webhooks.list();
  assert.deepEqual(theirs.data?.map((e) => e.id), mine.data?.map((e) => e.id));
  await assert.rejects(op.withOwner('nobody').webhooks.list(), (err) => err instanceof HookdError && err.code === 'not_found');
});

test('the defaults: 3 retries, no wait over 30 s', async (t) => {
  if (skipWithout(t)) return;
  const c = new HookdClient({ baseUrl: proxy.url, apiKey: hookd.key });
  proxy.seen.length = 0;
  proxy.throttle(5, '0');
  await assert.rejects(c.webhooks.list(), (err) => err instanceof HookdError && err.status === 429);
  assert.equal(proxy.seen.length, 4);
  proxy.seen.length = 0;
  proxy.throttle(1, '31');
  await assert.rejects(c.webhooks.list(), (err) => err instanceof HookdError && err.retryAfterMs === 31_000);
  assert.equal(proxy.seen.length, 1);
  proxy.throttle(0, '0');
});

test('retries are bounded', async (t) => {
  if (skipWithout(t)) return;
  const c = new HookdClient({ baseUrl: proxy.url, apiKey: hookd.key, retry: { attempts: 2 } });
  proxy.seen.length = 0;
  proxy.throttle(5, '0');
  await assert.rejects(c.webhooks.list(), (err) => err instanceof HookdError && err.status === 429);
  assert.equal(proxy.seen.length, 3, 'the first try and 2 retries');
  proxy.throttle(0, '0');
});

test('the same idempotency key publishes once', async (t) => {
  if (skipWithout(t)) return;
  const a = await client.events.publish({ type: 'invoice.paid', idempotency_key: 'order-7' });
  const b = await client.events.publish({ type: 'invoice.paid', idempotency_key: 'order-7' });
  assert.equal(a.id, b.id);
  assert.equal(b.duplicate, true);
});
