// Shared by the test files (ESM and CJS). Not a test file itself.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export const vectors = JSON.parse(
  readFileSync(new URL('./fixtures/standard-webhooks-vectors.json', import.meta.url), 'utf8'),
);

/** The vectors' `expect` values mapped to this package's error codes. */
export const EXPECT_TO_CODE = Object.freeze({
  invalid_signature: 'no_matching_signature',
  timestamp_too_old: 'timestamp_too_old',
  timestamp_too_new: 'timestamp_too_new',
  missing_header: 'missing_header',
  // Only in `extra_cases` (outside the file's five-value set): an unparsable
  // webhook-timestamp. Our name for it is malformed_header.
  invalid_header: 'malformed_header',
});

const CODE_TO_CLASS = Object.freeze({
  missing_header: 'MissingHeaderError',
  malformed_header: 'MalformedHeaderError',
  no_matching_signature: 'NoMatchingSignatureError',
  timestamp_too_old: 'TimestampTooOldError',
  timestamp_too_new: 'TimestampTooNewError',
  invalid_body: 'InvalidBodyError',
});

/** The exact body of a vector case, as a string. */
export function casePayload(c) {
  if (typeof c.payload === 'string') return c.payload;
  const { char, count } = c.payload_repeat;
  return char.repeat(count);
}

/**
 * The case's headers in one of three shapes a receiver may hold them in:
 * lower-case object (Node's req.headers), mixed-case object, fetch Headers.
 */
export function caseHeaders(c, shape) {
  const entries = [
    ['webhook-id', c.msg_id],
    ['webhook-timestamp', c.timestamp],
    ['webhook-signature', c.signature_header],
  ].filter(([, value]) => value !== null);
  if (shape === 'lower') return Object.fromEntries(entries);
  if (shape === 'mixed') {
    const names = { 'webhook-id': 'Webhook-Id', 'webhook-timestamp': 'WEBHOOK-TIMESTAMP', 'webhook-signature': 'Webhook-Signature' };
    return Object.fromEntries(entries.map(([k, v]) => [names[k], v]));
  }
  if (shape === 'Headers') return new Headers(entries);
  throw new Error(`unknown header shape ${shape}`);
}

/** Asserts that `promise` rejects with a WebhookVerificationError of `code` (and its subclass). */
export async function rejectsWithCode(pkg, promise, code) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof Error, 'an Error');
    assert.ok(err instanceof pkg.WebhookVerificationError, `a WebhookVerificationError, got ${err}`);
    assert.equal(err.code, code, `code (message: ${err.message})`);
    const cls = pkg[CODE_TO_CLASS[code]];
    assert.ok(err instanceof cls, `instanceof ${CODE_TO_CLASS[code]}`);
    assert.equal(err.name, CODE_TO_CLASS[code]);
    for (const [otherCode, otherName] of Object.entries(CODE_TO_CLASS)) {
      if (otherCode !== code) assert.ok(!(err instanceof pkg[otherName]), `not instanceof ${otherName}`);
    }
    return true;
  });
}

/** Runs one symmetric vector case through verifyStandardSignature and verifyStandard. */
export async function checkStandardCase(pkg, c, code, { body = casePayload(c), shape = 'lower' } = {}) {
  const headers = caseHeaders(c, shape);
  const options = { now: c.now };
  if (code === 'valid') {
    const verified = await pkg.verifyStandardSignature(body, headers, c.secret, options);
    assert.equal(verified.id, c.msg_id);
    assert.equal(verified.timestamp, Number(c.timestamp));
    assert.deepEqual(verified.body, new TextEncoder().encode(casePayload(c)));
    // The envelope-returning form: the parsed body if it is a JSON object,
    // otherwise invalid_body (the signature itself is fine).
    let parsed;
    try {
      parsed = JSON.parse(casePayload(c));
    } catch {
      parsed = undefined;
    }
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      assert.deepEqual(await pkg.verifyStandard(body, headers, c.secret, options), parsed);
    } else {
      await rejectsWithCode(pkg, pkg.verifyStandard(body, headers, c.secret, options), 'invalid_body');
    }
    return;
  }
  await rejectsWithCode(pkg, pkg.verifyStandardSignature(body, headers, c.secret, options), code);
  await rejectsWithCode(pkg, pkg.verifyStandard(body, headers, c.secret, options), code);
}

export function expectedCode(c) {
  if (c.expect === 'valid') return 'valid';
  const code = EXPECT_TO_CODE[c.expect];
  assert.ok(code, `case ${c.name}: unknown expect value ${JSON.stringify(c.expect)}`);
  return code;
}
