// webhooks.verify (the kwork scheme), table-driven, against the built ESM entry.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import * as pkg from '@hookd/webhooks';
import { rejectsWithCode } from './helpers.mjs';

const { webhooks, signKwork, verifyKwork, verifyKworkSignature, parseKworkSignatureHeader } = pkg;

// The envelope example from seed 002, minified, at its own createdAt.
const EVENT = {
  id: 'evt_01JBCDEF0123456789ABCDEF01',
  type: 'app.installed',
  createdAt: '2026-10-28T12:00:00Z',
  apiVersion: '2026-10-28',
  tenant: 'acme_corp',
  environment: 'live',
  app: 'shop-sync',
  data: { version: '1.0.0', scopes: ['tables.base:read', 'platform:ping'] },
};
const BODY = JSON.stringify(EVENT);
const SECRET = 'kwork_test_secret';
const T = 1793188800; // 2026-10-28T12:00:00Z
// Computed independently (Python hmac) for SECRET, T and BODY.
const KNOWN_SIG = '8bb9da43f19d49168e08dc3ba29d7c548442eb4b3a22ed6005747f8dfd95f1cd';
const HEADER = `t=${T},v1=${KNOWN_SIG}`;

/** An independent reference: node:crypto's HMAC, as in the seed's Go reference. */
function referenceHex(secret, t, body) {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
}

describe('signKwork', () => {
  test('matches the known answer and node:crypto', async () => {
    assert.equal(await signKwork(SECRET, T, BODY), HEADER);
    assert.equal(referenceHex(SECRET, T, BODY), KNOWN_SIG);
    const cases = [
      ['s', 0, ''],
      ['秘密 with spaces and ünïcödé', 1, '{"name":"Zoë","note":"naïve ✓ 日本"}'],
      ['x'.repeat(200), 9_999_999_999, 'a'.repeat(100_000)],
    ];
    for (const [secret, t, body] of cases) {
      assert.equal(await signKwork(secret, t, body), `t=${t},v1=${referenceHex(secret, t, body)}`);
      assert.equal(await signKwork(secret, t, new TextEncoder().encode(body)), `t=${t},v1=${referenceHex(secret, t, body)}`);
    }
  });

  test('the key is the secret string as given (no base64, no prefix stripping)', async () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    assert.equal(await signKwork(secret, T, BODY), `t=${T},v1=${referenceHex(secret, T, BODY)}`);
  });
});

describe('webhooks.verify', () => {
  test('valid: returns the envelope, typed as the seed describes', async () => {
    const event = await webhooks.verify(BODY, HEADER, SECRET, 300, { now: T });
    assert.deepEqual(event, EVENT);
    assert.equal(webhooks.verify, verifyKwork);
  });

  // [name, body, header, options, expected code or 'valid']
  const tamperedBody = BODY.replace('"live"', '"test"');
  const otherT = T + 1;
  const flipLast = KNOWN_SIG.slice(0, -1) + (KNOWN_SIG.endsWith('0') ? '1' : '0');
  const table = [
    ['valid', BODY, HEADER, { now: T }, 'valid'],
    ['valid, 300 s old (edge)', BODY, HEADER, { now: T + 300 }, 'valid'],
    ['valid, 300 s ahead (edge)', BODY, HEADER, { now: T - 300 }, 'valid'],
    ['valid, now as a Date', BODY, HEADER, { now: new Date(T * 1000) }, 'valid'],
    ['valid, v1 before t', BODY, `v1=${KNOWN_SIG},t=${T}`, { now: T }, 'valid'],
    ['valid, unknown parts ignored', BODY, `t=${T},v0=abc,v1=${KNOWN_SIG},x`, { now: T }, 'valid'],
    ['valid, repeated v1: the last one counts', BODY, `t=${T},v1=${'0'.repeat(64)},v1=${KNOWN_SIG}`, { now: T }, 'valid'],
    ['valid, repeated t: the last one counts', BODY, `t=0,t=${T},v1=${KNOWN_SIG}`, { now: T }, 'valid'],
    ['valid, leading zeros in t are signed as sent', BODY, `t=0${T},v1=${referenceHex(SECRET, `0${T}`, BODY)}`, { now: T }, 'valid'],
    ['repeated v1: an earlier match does not count', BODY, `t=${T},v1=${KNOWN_SIG},v1=${'0'.repeat(64)}`, { now: T }, 'no_matching_signature'],
    ['repeated t: the last one is checked', BODY, `t=${T},t=0,v1=${KNOWN_SIG}`, { now: T }, 'timestamp_too_old'],
    ['t with a + sign parses but is signed as sent', BODY, `t=+${T},v1=${KNOWN_SIG}`, { now: T }, 'no_matching_signature'],
    ['tampered body', tamperedBody, HEADER, { now: T }, 'no_matching_signature'],
    ['body re-serialized', JSON.stringify(EVENT, null, 2), HEADER, { now: T }, 'no_matching_signature'],
    ['tampered timestamp (still within tolerance)', BODY, `t=${otherT},v1=${KNOWN_SIG}`, { now: T }, 'no_matching_signature'],
    ['tampered signature (last hex digit)', BODY, `t=${T},v1=${flipLast}`, { now: T }, 'no_matching_signature'],
    ['signature in upper-case hex', BODY, `t=${T},v1=${KNOWN_SIG.toUpperCase()}`, { now: T }, 'no_matching_signature'],
    ['truncated signature', BODY, `t=${T},v1=${KNOWN_SIG.slice(0, 32)}`, { now: T }, 'no_matching_signature'],
    ['empty v1', BODY, `t=${T},v1=`, { now: T }, 'no_matching_signature'],
    ['signature under another key name', BODY, `t=${T},v2=${KNOWN_SIG},v1=00`, { now: T }, 'no_matching_signature'],
    ['too old (301 s)', BODY, HEADER, { now: T + 301 }, 'timestamp_too_old'],
    ['too new (301 s ahead)', BODY, HEADER, { now: T - 301 }, 'timestamp_too_new'],
    ['too old wins over a bad signature', tamperedBody, HEADER, { now: T + 3600 }, 'timestamp_too_old'],
    ['malformed: not k=v', BODY, 'garbage', { now: T }, 'malformed_header'],
    ['malformed: no t', BODY, `v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['malformed: no v1', BODY, `t=${T}`, { now: T }, 'malformed_header'],
    ['malformed: t not a number', BODY, `t=abc,v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['malformed: empty t', BODY, `t=,v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['negative t is too old', BODY, `t=-${T},v1=${KNOWN_SIG}`, { now: T }, 'timestamp_too_old'],
    ['largest int64 t is too new', BODY, `t=9223372036854775807,v1=${KNOWN_SIG}`, { now: T }, 'timestamp_too_new'],
    ['malformed: t beyond int64', BODY, `t=9223372036854775808,v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['malformed: spaces are not trimmed (as in the seed reference)', BODY, `t=${T}, v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['malformed: space before t', BODY, ` t=${T},v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['malformed: space inside t', BODY, `t= ${T},v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['malformed: hex t', BODY, `t=0x10,v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['malformed: fractional t', BODY, `t=${T}.0,v1=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['malformed: Stripe-style header without t', BODY, `v1=${KNOWN_SIG},v0=${KNOWN_SIG}`, { now: T }, 'malformed_header'],
    ['missing: undefined', BODY, undefined, { now: T }, 'missing_header'],
    ['missing: null', BODY, null, { now: T }, 'missing_header'],
    ['missing: empty', BODY, '', { now: T }, 'missing_header'],
    ['malformed: blank', BODY, '   ', { now: T }, 'malformed_header'],
  ];

  for (const [name, body, header, options, expected] of table) {
    test(name, async () => {
      for (const b of [body, new TextEncoder().encode(body)]) {
        if (expected === 'valid') {
          assert.deepEqual(await webhooks.verify(b, header, SECRET, 300, options), JSON.parse(body));
        } else {
          await rejectsWithCode(pkg, webhooks.verify(b, header, SECRET, 300, options), expected);
        }
      }
    });
  }

  test('wrong secret', async () => {
    await rejectsWithCode(pkg, webhooks.verify(BODY, HEADER, SECRET + 'x', 300, { now: T }), 'no_matching_signature');
    await rejectsWithCode(pkg, webhooks.verify(BODY, HEADER, 'Kwork_test_secret', 300, { now: T }), 'no_matching_signature');
  });

  test('tolerance argument: default 300, custom, zero', async () => {
    assert.deepEqual(await webhooks.verify(BODY, HEADER, SECRET, undefined, { now: T + 300 }), EVENT);
    await rejectsWithCode(pkg, webhooks.verify(BODY, HEADER, SECRET, undefined, { now: T + 301 }), 'timestamp_too_old');
    await rejectsWithCode(pkg, webhooks.verify(BODY, HEADER, SECRET, 60, { now: T + 61 }), 'timestamp_too_old');
    assert.deepEqual(await webhooks.verify(BODY, HEADER, SECRET, 0, { now: T }), EVENT);
    await rejectsWithCode(pkg, webhooks.verify(BODY, HEADER, SECRET, 0, { now: T - 1 }), 'timestamp_too_new');
  });

  test('wall clock by default: a fresh signature passes, the fixed one is stale', async () => {
    const now = Math.floor(Date.now() / 1000);
    const header = await signKwork(SECRET, now, BODY);
    assert.deepEqual(await webhooks.verify(BODY, header, SECRET, 300), EVENT);
    assert.deepEqual(await webhooks.verify(BODY, header, SECRET), EVENT);
    await rejectsWithCode(pkg, webhooks.verify(BODY, HEADER, SECRET, 300), 'timestamp_too_old');
  });

  test('Buffer bodies and multi-byte UTF-8', async () => {
    const event = { ...EVENT, data: { note: 'naïve ✓ 日本 🎉' } };
    const body = JSON.stringify(event);
    const header = await signKwork(SECRET, T, body);
    assert.deepEqual(await webhooks.verify(Buffer.from(body, 'utf8'), header, SECRET, 300, { now: T }), event);
    assert.equal(header, `t=${T},v1=${referenceHex(SECRET, T, body)}`);
  });

  test('a valid signature over a non-JSON or non-object body is invalid_body', async () => {
    for (const body of ['not json', '[]', 'null', '']) {
      const header = await signKwork(SECRET, T, body);
      await rejectsWithCode(pkg, webhooks.verify(body, header, SECRET, 300, { now: T }), 'invalid_body');
      const verified = await verifyKworkSignature(body, header, SECRET, 300, { now: T });
      assert.equal(verified.timestamp, T);
    }
    const notUtf8 = new Uint8Array([0x7b, 0x22, 0xc3, 0x22, 0x7d]);
    const header = await signKwork(SECRET, T, notUtf8);
    await rejectsWithCode(pkg, webhooks.verify(notUtf8, header, SECRET, 300, { now: T }), 'invalid_body');
  });

  test('parseKworkSignatureHeader', () => {
    assert.deepEqual(parseKworkSignatureHeader('t=0017,v1=ab,v1=cd,x=1,y'), { rawTimestamp: '0017', timestamp: 17, signature: 'cd' });
    assert.deepEqual(parseKworkSignatureHeader('v1=a=b,t=-3'), { rawTimestamp: '-3', timestamp: -3, signature: 'a=b' });
    assert.throws(() => parseKworkSignatureHeader('t=1'), pkg.MalformedHeaderError);
    assert.throws(() => parseKworkSignatureHeader(undefined), pkg.MissingHeaderError);
  });

  test('the timestamp is signed exactly as sent', async () => {
    // "0017" and "17" are the same instant but different signed content.
    const header = await signKwork(SECRET, '0017', BODY);
    assert.equal(header, `t=0017,v1=${referenceHex(SECRET, '0017', BODY)}`);
    assert.deepEqual(await webhooks.verify(BODY, header, SECRET, 300, { now: 17 }), EVENT);
    await rejectsWithCode(pkg, webhooks.verify(BODY, header.replace('t=0017', 't=17'), SECRET, 300, { now: 17 }), 'no_matching_signature');
  });

  test('misconfiguration throws TypeError, not a verification error', async () => {
    await assert.rejects(webhooks.verify(BODY, HEADER, '', 300, { now: T }), TypeError);
    await assert.rejects(webhooks.verify(BODY, HEADER, undefined, 300, { now: T }), TypeError);
    await assert.rejects(webhooks.verify(BODY, HEADER, SECRET, -1, { now: T }), TypeError);
    await assert.rejects(webhooks.verify(BODY, HEADER, SECRET, Number.NaN, { now: T }), TypeError);
    await assert.rejects(webhooks.verify(EVENT, HEADER, SECRET, 300, { now: T }), TypeError);
    await assert.rejects(webhooks.verify(BODY, ['a'], SECRET, 300, { now: T }), TypeError);
    await assert.rejects(signKwork(SECRET, Number.NaN, BODY), TypeError);
  });
});
