// verifyStandard behaviour beyond the vectors: header shapes, secrets, clock,
// check order, bodies. Against the built ESM entry.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as pkg from '@hookd/webhooks';
import { rejectsWithCode } from './helpers.mjs';

const { signStandard, verifyStandard, verifyStandardSignature, webhooks } = pkg;

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const TS = 1_700_000_000;
const ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
const EVENT = {
  id: 'evt_01JBCDEF0123456789ABCDEF01',
  type: 'post.published',
  subject: 'post/42',
  occurred_at: '2023-11-14T22:13:20Z',
  data: { published: true },
};
const BODY = JSON.stringify(EVENT);

async function signed(body = BODY, { id = ID, ts = TS, secret = SECRET } = {}) {
  return { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': await signStandard(secret, id, ts, body) };
}

describe('verifyStandard', () => {
  test('returns the typed envelope; webhooks.verifyStandard is the same function', async () => {
    assert.equal(webhooks.verifyStandard, verifyStandard);
    assert.deepEqual(await verifyStandard(BODY, await signed(), SECRET, { now: TS }), EVENT);
  });

  test('signStandard matches the shared upstream vector', async () => {
    assert.equal(
      await signStandard(SECRET, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}'),
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
  });

  test('the whsec_ prefix is optional', async () => {
    const headers = await signed();
    const bare = SECRET.slice('whsec_'.length);
    assert.deepEqual(await verifyStandard(BODY, headers, bare, { now: TS }), EVENT);
    assert.equal(await signStandard(bare, ID, TS, BODY), headers['webhook-signature']);
  });

  test('headers: Headers instance, any name case, array values, repeated signature headers', async () => {
    const h = await signed();
    const options = { now: TS };
    assert.deepEqual(await verifyStandard(BODY, new Headers(h), SECRET, options), EVENT);
    const upper = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v]));
    assert.deepEqual(await verifyStandard(BODY, upper, SECRET, options), EVENT);
    const arrays = Object.fromEntries(Object.entries(h).map(([k, v]) => [k, [v]]));
    assert.deepEqual(await verifyStandard(BODY, arrays, SECRET, options), EVENT);
    // Two webhook-signature header lines are one list; the second one matches.
    const repeated = { ...h, 'webhook-signature': ['v1,AAAA', h['webhook-signature']] };
    assert.deepEqual(await verifyStandard(BODY, repeated, SECRET, options), EVENT);
    // Fetch Headers joins repeated lines with ", ": the list stays space-separated.
    const fetchHeaders = new Headers(h);
    fetchHeaders.set('webhook-signature', `v1,AAAA ${h['webhook-signature']}`);
    assert.deepEqual(await verifyStandard(BODY, fetchHeaders, SECRET, options), EVENT);
  });

  test('two different webhook-id values are malformed; equal duplicates are fine', async () => {
    const h = await signed();
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, 'webhook-id': [ID, 'msg_other'] }, SECRET, { now: TS }), 'malformed_header');
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, 'Webhook-Id': 'msg_other' }, SECRET, { now: TS }), 'malformed_header');
    assert.deepEqual(await verifyStandard(BODY, { ...h, 'webhook-id': [ID, ID] }, SECRET, { now: TS }), EVENT);
  });

  test('empty header values count as missing', async () => {
    const h = await signed();
    for (const name of Object.keys(h)) {
      await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, [name]: '' }, SECRET, { now: TS }), 'missing_header');
      await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, [name]: [] }, SECRET, { now: TS }), 'missing_header');
      await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, [name]: undefined }, SECRET, { now: TS }), 'missing_header');
    }
    await rejectsWithCode(pkg, verifyStandard(BODY, {}, SECRET, { now: TS }), 'missing_header');
    await rejectsWithCode(pkg, verifyStandard(BODY, new Headers(), SECRET, { now: TS }), 'missing_header');
  });

  test('check order: headers present -> timestamp parses -> tolerance -> signature', async () => {
    const bad = { 'webhook-signature': 'v1,AAAA' };
    // timestamp absent and unparsable elsewhere: missing wins
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...bad, 'webhook-timestamp': 'x' }, SECRET, { now: TS }), 'missing_header');
    // unparsable timestamp with a bad signature: malformed wins
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...bad, 'webhook-id': ID, 'webhook-timestamp': 'x' }, SECRET, { now: TS }), 'malformed_header');
    // stale timestamp with a bad signature: tolerance wins
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...bad, 'webhook-id': ID, 'webhook-timestamp': String(TS) }, SECRET, { now: TS + 301 }), 'timestamp_too_old');
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...bad, 'webhook-id': ID, 'webhook-timestamp': String(TS) }, SECRET, { now: TS - 301 }), 'timestamp_too_new');
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...bad, 'webhook-id': ID, 'webhook-timestamp': String(TS) }, SECRET, { now: TS }), 'no_matching_signature');
  });

  test('timestamps parse like Go strconv.ParseInt and are signed as the integer', async () => {
    const h = await signed();
    for (const ts of ['1700000000.0', '1e9', ' 1700000000', '1700000000 ', '0x10', '+', '-', '9223372036854775808', 'hello']) {
      await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, 'webhook-timestamp': ts }, SECRET, { now: TS }), 'malformed_header');
    }
    // The official libraries sign the parsed integer, so these equal forms verify.
    for (const ts of ['+1700000000', '01700000000']) {
      assert.deepEqual(await verifyStandard(BODY, { ...h, 'webhook-timestamp': ts }, SECRET, { now: TS }), EVENT);
    }
    assert.equal(await signStandard(SECRET, ID, '01700000000', BODY), h['webhook-signature']);
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, 'webhook-timestamp': '-1' }, SECRET, { now: TS }), 'timestamp_too_old');
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, 'webhook-timestamp': '9223372036854775807' }, SECRET, { now: TS }), 'timestamp_too_new');
  });

  test('clock: now as seconds or Date, custom tolerance, wall clock by default', async () => {
    const h = await signed();
    assert.deepEqual(await verifyStandard(BODY, h, SECRET, { now: new Date(TS * 1000 + 300_999) }), EVENT);
    await rejectsWithCode(pkg, verifyStandard(BODY, h, SECRET, { now: new Date((TS + 301) * 1000) }), 'timestamp_too_old');
    await rejectsWithCode(pkg, verifyStandard(BODY, h, SECRET, { now: TS + 11, tolerance: 10 }), 'timestamp_too_old');
    assert.deepEqual(await verifyStandard(BODY, h, SECRET, { now: TS + 10, tolerance: 10 }), EVENT);
    await rejectsWithCode(pkg, verifyStandard(BODY, h, SECRET, { now: TS - 1, tolerance: 0 }), 'timestamp_too_new');
    // No `now`: the wall clock. TS is long past.
    await rejectsWithCode(pkg, verifyStandard(BODY, h, SECRET), 'timestamp_too_old');
    const fresh = Math.floor(Date.now() / 1000);
    assert.deepEqual(await verifyStandard(BODY, await signed(BODY, { ts: fresh }), SECRET), EVENT);
  });

  test('the signature covers id, timestamp and the exact body bytes', async () => {
    const h = await signed();
    await rejectsWithCode(pkg, verifyStandard(BODY + ' ', h, SECRET, { now: TS }), 'no_matching_signature');
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, 'webhook-id': ID + 'x' }, SECRET, { now: TS }), 'no_matching_signature');
    await rejectsWithCode(pkg, verifyStandard(BODY, { ...h, 'webhook-timestamp': String(TS + 1) }, SECRET, { now: TS }), 'no_matching_signature');
    await rejectsWithCode(pkg, verifyStandard(BODY, h, 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD', { now: TS }), 'no_matching_signature');
  });

  test('non-JSON or non-object bodies with a valid signature are invalid_body', async () => {
    for (const body of ['not json', '[1,2]', 'null', '42', '"s"', '']) {
      const h = await signed(body);
      await rejectsWithCode(pkg, verifyStandard(body, h, SECRET, { now: TS }), 'invalid_body');
      const verified = await verifyStandardSignature(body, h, SECRET, { now: TS });
      assert.equal(new TextDecoder().decode(verified.body), body);
    }
    const notUtf8 = new Uint8Array([0x7b, 0xff, 0x7d]);
    await rejectsWithCode(pkg, verifyStandard(notUtf8, await signed(notUtf8), SECRET, { now: TS }), 'invalid_body');
  });

  test('body as Uint8Array (and a subarray of a larger buffer) verifies the same bytes', async () => {
    const h = await signed();
    const bytes = new TextEncoder().encode(`xx${BODY}yy`).subarray(2, -2);
    assert.deepEqual(await verifyStandard(bytes, h, SECRET, { now: TS }), EVENT);
  });

  test('misconfiguration throws TypeError, not a verification error', async () => {
    const h = await signed();
    for (const secret of ['whsec_', '', 'whsec_not*base64', 'whsec_A', 'whsec_AAA', 'whsec_AA A', undefined]) {
      await assert.rejects(verifyStandard(BODY, h, secret, { now: TS }), TypeError, String(secret));
    }
    await assert.rejects(verifyStandard(BODY, h, SECRET, { now: TS, tolerance: -1 }), TypeError);
    await assert.rejects(verifyStandard(BODY, h, SECRET, { now: Number.NaN }), TypeError);
    await assert.rejects(verifyStandard(BODY, h, SECRET, { now: new Date('nope') }), TypeError);
    await assert.rejects(verifyStandard({ parsed: true }, h, SECRET, { now: TS }), TypeError);
    await assert.rejects(verifyStandard(BODY, null, SECRET, { now: TS }), TypeError);
    await assert.rejects(signStandard(SECRET, ID, 1.5, BODY), TypeError);
    await assert.rejects(signStandard(SECRET, ID, 'hello', BODY), TypeError);
    await assert.rejects(signStandard(SECRET, '', TS, BODY), TypeError);
  });
});
