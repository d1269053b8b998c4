// Several keys: the receiver's side of a rotation (old and new secret, or
// public keys), and headers carrying two signatures. Against the built ESM entry.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, test } from 'node:test';
import * as pkg from '@hookd/webhooks';
import { rejectsWithCode } from './helpers.mjs';

const { signStandard, verifyStandard } = pkg;

const OLD = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const NEW = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
const THIRD = 'whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=';
const TS = 1_700_000_000;
const ID = 'msg_rotation';
const BODY = '{"id":"evt_1","type":"x.y","subject":"","occurred_at":"2023-11-14T22:13:20Z","data":{}}';

/** A fresh Ed25519 pair as whsk_ / whpk_, made with node:crypto (not the package). */
function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d, 'base64url');
  return { sk: `whsk_${Buffer.concat([seed, pub]).toString('base64')}`, pk: `whpk_${pub.toString('base64')}` };
}

async function headers(...keys) {
  const entries = [];
  for (const k of keys) entries.push(await signStandard(k, ID, TS, BODY));
  return { 'webhook-id': ID, 'webhook-timestamp': String(TS), 'webhook-signature': entries.join(' ') };
}

describe('several keys', () => {
  test('secrets: each verifier accepts exactly what one of its keys signed', async () => {
    const cases = [
      [[OLD], [OLD], true],
      [[OLD], [NEW], false],
      [[OLD], [NEW, OLD], true],
      [[NEW], [NEW, OLD], true],
      [[NEW], [OLD], false],
      [[NEW, OLD], [OLD], true],
      [[NEW, OLD], [NEW], true],
      [[NEW, OLD], [THIRD], false],
    ];
    for (const [verifierKeys, signers, ok] of cases) {
      const h = await headers(...signers);
      const keys = verifierKeys.length === 1 ? verifierKeys[0] : verifierKeys;
      if (ok) assert.equal((await verifyStandard(BODY, h, keys, { now: TS })).id, 'evt_1');
      else await rejectsWithCode(pkg, verifyStandard(BODY, h, keys, { now: TS }), 'no_matching_signature');
    }
  });

  test('public keys: old and new, and a mixed list with a secret', async () => {
    const a = keyPair();
    const b = keyPair();
    assert.match(await signStandard(a.sk, ID, TS, BODY), /^v1a,[A-Za-z0-9+/]{86}==$/);
    assert.ok(await verifyStandard(BODY, await headers(a.sk), [b.pk, a.pk], { now: TS }));
    assert.ok(await verifyStandard(BODY, await headers(b.sk, a.sk), b.pk, { now: TS }));
    assert.ok(await verifyStandard(BODY, await headers(NEW, b.sk), [OLD, b.pk], { now: TS }));
    await rejectsWithCode(pkg, verifyStandard(BODY, await headers(a.sk), b.pk, { now: TS }), 'no_matching_signature');
    await rejectsWithCode(pkg, verifyStandard(BODY, await headers(NEW), [a.pk, b.pk], { now: TS }), 'no_matching_signature');
    // A tampered body fails every key.
    await rejectsWithCode(pkg, verifyStandard(`${BODY} `, await headers(a.sk, NEW), [a.pk, NEW], { now: TS }), 'no_matching_signature');
  });

  test('the error says how many keys were tried', async () => {
    const err = await verifyStandard(BODY, await headers(THIRD), [OLD, NEW], { now: TS }).catch((e) => e);
    assert.match(err.message, /any of these 2 secrets/);
  });
});
