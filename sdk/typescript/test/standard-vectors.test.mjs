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

// The asymmetric (Ed25519, "v1a") cases: the package verifies them with the
// case's whpk_ public key (alone, and in a list beside an unrelated secret),
// signs them back from the whsk_ key, and the file's expectations are also
// checked with a small Ed25519 verifier written here from the spec.
describe('vectors: asymmetric_cases', () => {
  const symmetric = vectors.cases.find((c) => c.name === 'sign_vector_default');
  const unrelated = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';

  for (const c of vectors.asymmetric_cases) {
    test(`${c.name} -> ${c.expect} with the public key`, async () => {
      const code = expectedCode(c);
      await checkStandardCase(pkg, { ...c, secret: c.public_key }, code);
      await checkStandardCase(pkg, { ...c, secret: [unrelated, c.public_key] }, code, { shape: 'Headers' });
      assert.equal(await ed25519Verify(globalThis.crypto?.subtle ?? (await import('node:crypto')).webcrypto.subtle, c), c.expect);
    });

    if (c.expect === 'valid') {
      test(`${c.name}: signStandard with the whsk_ key reproduces the v1a entry`, async () => {
        const entry = await pkg.signStandard(c.secret_key, c.msg_id, c.timestamp, c.payload);
        assert.ok(c.signature_header.split(' ').includes(entry), entry);
      });
    }

    test(`${c.name}: a symmetric verifier never accepts the v1a entry`, async () => {
      const v1aOnly = c.signature_header.split(' ').filter((e) => e.startsWith('v1a,')).join(' ');
      if (v1aOnly === '') return;
      const code = c.expect === 'timestamp_too_old' ? 'timestamp_too_old' : 'no_matching_signature';
      await checkStandardCase(pkg, { ...c, secret: symmetric.secret, signature_header: v1aOnly }, code);
    });
  }

  test('a whsk_ signing key given to the verifier is a configuration error, not a pass', async () => {
    const c = vectors.asymmetric_cases[0];
    const headers = { 'webhook-id': c.msg_id, 'webhook-timestamp': c.timestamp, 'webhook-signature': c.signature_header };
    await assert.rejects(pkg.verifyStandard(c.payload, headers, c.secret_key, { now: c.now }), /whpk_/);
    await assert.rejects(pkg.verifyStandard(c.payload, headers, [c.public_key, c.secret_key], { now: c.now }), TypeError);
    await assert.rejects(pkg.verifyStandard(c.payload, headers, [], { now: c.now }), TypeError);
    await assert.rejects(pkg.signStandard(c.public_key, c.msg_id, c.timestamp, c.payload), TypeError);
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
