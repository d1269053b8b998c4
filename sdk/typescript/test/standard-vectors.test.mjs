// Every case of the Standard Webhooks vectors file, against the built ESM entry.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as pkg from '@hookd/webhooks';
import { casePayload, checkStandardCase, expectedCode, rejectsWithCode, vectors } from './helpers.mjs';

test('the vectors file has the four arrays this suite reads', () => {
  for (const key of ['cases', 'extra_cases', 'large_payload_cases', 'asymmetric_cases']) {
    assert.ok(Array.isArray(vectors[key]) && vectors[key].length > 0, key);
  }
  assert.equal(vectors.scheme.tolerance_seconds, 300, 'the default tolerance the vectors assume');
});

for (const group of ['cases', 'extra_cases', 'large_payload_cases']) {
  describe(`vectors: ${group}`, () => {
    for (const c of vectors[group]) {
      test(`${c.name} -> ${c.expect}`, async () => {
        const code = expectedCode(c);
        // Body as the exact string, headers as Node's lower-case object.
        await checkStandardCase(pkg, c, code, { shape: 'lower' });
        // Body as bytes, headers as a fetch Headers instance.
        await checkStandardCase(pkg, c, code, { shape: 'Headers', body: new TextEncoder().encode(casePayload(c)) });
        // Header names in other cases.
        await checkStandardCase(pkg, c, code, { shape: 'mixed' });
      });
    }
  });
}

// The asymmetric (Ed25519, "v1a") cases. Their `expect` is what an Ed25519
// verifier should say; this package only verifies v1 (HMAC) signatures. So:
//  1. the file's expectation is checked with a small Ed25519 verifier written
//     here (it also proves the v1a values are real signatures, not noise);
//  2. the symmetric verifier, holding the HMAC secret of the same message, must
//     never accept a v1a entry: its outcome for each case is listed below.
describe('vectors: asymmetric_cases', () => {
  const symmetric = vectors.cases.find((c) => c.name === 'sign_vector_default');

  const SYMMETRIC_OUTCOME = {
    ed25519_sign_vector: 'no_matching_signature', // only a v1a entry: skipped
    ed25519_mixed_with_v1: 'valid', // accepted through its v1 (HMAC) entry only; see the v1a-only test below
    ed25519_payload_tampered: 'no_matching_signature',
    ed25519_labelled_v1: 'no_matching_signature', // a 64-byte Ed25519 value is not the HMAC
    ed25519_too_old: 'timestamp_too_old', // the timestamp is checked before any signature
  };

  test('the symmetric secret signs the same message the asymmetric cases sign', () => {
    for (const c of vectors.asymmetric_cases) {
      assert.equal(c.msg_id, symmetric.msg_id, c.name);
      assert.equal(c.timestamp, symmetric.timestamp, c.name);
    }
  });

  for (const c of vectors.asymmetric_cases) {
    test(`${c.name}: file expects ${c.expect} from an Ed25519 verifier`, async (t) => {
      const subtle = globalThis.crypto?.subtle ?? (await import('node:crypto')).webcrypto.subtle;
      let result;
      try {
        result = await ed25519Verify(subtle, c);
      } catch (err) {
        if (err?.name === 'NotSupportedError') return t.skip('this runtime has no WebCrypto Ed25519');
        throw err;
      }
      assert.equal(result, c.expect);
    });

    test(`${c.name}: the symmetric verifier does not accept the v1a entry`, async () => {
      const outcome = SYMMETRIC_OUTCOME[c.name];
      assert.ok(outcome, `new asymmetric case ${c.name}: decide its symmetric outcome and add it to the table`);
      const asSymmetric = { ...c, secret: symmetric.secret };
      await checkStandardCase(pkg, asSymmetric, outcome);

      // With every v1 entry removed, only v1a entries are left: nothing can pass.
      const v1aOnly = c.signature_header.split(' ').filter((e) => e.startsWith('v1a,')).join(' ');
      if (v1aOnly !== '') {
        const code = outcome === 'timestamp_too_old' ? 'timestamp_too_old' : 'no_matching_signature';
        await checkStandardCase(pkg, { ...asSymmetric, signature_header: v1aOnly }, code);
      }
    });
  }

  test('an Ed25519 key given as the symmetric secret is a configuration error, not a pass', async () => {
    const c = vectors.asymmetric_cases[0];
    const headers = { 'webhook-id': c.msg_id, 'webhook-timestamp': c.timestamp, 'webhook-signature': c.signature_header };
    for (const key of [c.public_key, c.secret_key]) {
      await assert.rejects(pkg.verifyStandard(c.payload, headers, key, { now: c.now }), TypeError);
    }
  });
});

// A minimal Standard Webhooks Ed25519 verifier (v1a entries only, same check
// order and tolerance rule), used only to check the file's own expectations.
async function ed25519Verify(subtle, c) {
  if (c.msg_id === null || c.timestamp === null || c.signature_header === null) return 'missing_header';
  const ts = Number(c.timestamp);
  if (c.now - ts > 300) return 'timestamp_too_old';
  if (ts - c.now > 300) return 'timestamp_too_new';
  const raw = Uint8Array.from(atob(c.public_key.replace(/^whpk_/, '')), (ch) => ch.charCodeAt(0));
  const key = await subtle.importKey('raw', raw, { name: 'Ed25519' }, false, ['verify']);
  const content = new TextEncoder().encode(`${c.msg_id}.${c.timestamp}.${c.payload}`);
  for (const entry of c.signature_header.split(' ')) {
    const [label, value] = entry.split(',', 2);
    if (label !== 'v1a' || !value) continue;
    const sig = Uint8Array.from(atob(value), (ch) => ch.charCodeAt(0));
    if (await subtle.verify({ name: 'Ed25519' }, key, sig, content)) return 'valid';
  }
  return 'invalid_signature';
}
