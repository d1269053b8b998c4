// verifyMessage: a message hookd sent to a broker, headers in the broker's
// shapes. Against the built ESM entry.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as pkg from '@hookd/webhooks';
import { rejectsWithCode } from './helpers.mjs';

const { messageHeaders, signKwork, signStandard, verifyMessage } = pkg;

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const TS = 1_700_000_000;
const EVENT = { id: 'evt_01JBCDEF0123456789ABCDEF01', type: 'order.paid', subject: 'orders/1', occurred_at: '2023-11-14T22:13:20Z', data: {} };
const BODY = JSON.stringify(EVENT);
const enc = (s) => new TextEncoder().encode(s);

describe('verifyMessage', () => {
  test('AMQP-style object, string values', async () => {
    const headers = { 'webhook-id': EVENT.id, 'webhook-timestamp': String(TS), 'webhook-signature': await signStandard(SECRET, EVENT.id, TS, BODY) };
    assert.deepEqual(await verifyMessage(BODY, headers, SECRET, { now: TS }), EVENT);
  });
  test('Kafka-style list, byte values, any case', async () => {
    const headers = [
      { key: 'Webhook-Id', value: enc(EVENT.id) },
      { key: 'webhook-timestamp', value: enc(String(TS)) },
      { key: 'webhook-signature', value: enc(await signStandard(SECRET, EVENT.id, TS, BODY)) },
    ];
    assert.deepEqual(await verifyMessage(enc(BODY), headers, SECRET, { now: TS }), EVENT);
  });
  test('a kwork message', async () => {
    const body = JSON.stringify({ id: 'evt_1', type: 'order.paid', data: {} });
    const headers = { 'x-kwork-signature': await signKwork('kw-secret', TS, body) };
    assert.equal((await verifyMessage(body, headers, 'kw-secret', { now: TS })).id, 'evt_1');
  });
  test('a changed body does not verify', async () => {
    const headers = { 'webhook-id': EVENT.id, 'webhook-timestamp': String(TS), 'webhook-signature': await signStandard(SECRET, EVENT.id, TS, BODY) };
    await rejectsWithCode(pkg, verifyMessage(BODY.replace('orders/1', 'orders/2'), headers, SECRET, { now: TS }), 'no_matching_signature');
  });
  test('messageHeaders skips values that are not text', () => {
    assert.deepEqual(messageHeaders({ A: 'x', b: 7, c: enc('y') }), { a: 'x', c: 'y' });
  });
});
