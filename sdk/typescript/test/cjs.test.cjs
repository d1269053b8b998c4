// The CommonJS entry point: require('@hookd/webhooks').
const assert = require('node:assert/strict');
const path = require('node:path');
const { describe, test } = require('node:test');
const pkg = require('@hookd/webhooks');

const helpers = import('./helpers.mjs');

describe('CommonJS build', () => {
  test('require resolves to dist/cjs', () => {
    assert.equal(require.resolve('@hookd/webhooks'), path.join(__dirname, '..', 'dist', 'cjs', 'index.js'));
  });

  test('every symmetric vector case verifies the same through require()', async () => {
    const { vectors, checkStandardCase, expectedCode } = await helpers;
    for (const c of [...vectors.cases, ...vectors.extra_cases]) {
      await checkStandardCase(pkg, c, expectedCode(c));
    }
  });

  test('kwork: sign, verify, reject with typed errors', async () => {
    const { rejectsWithCode } = await helpers;
    const body = JSON.stringify({ id: 'evt_1', type: 'open.ping', data: {} });
    const header = await pkg.signKwork('s3cret', 1700000000, body);
    assert.deepEqual(await pkg.webhooks.verify(body, header, 's3cret', 300, { now: 1700000000 }), JSON.parse(body));
    await rejectsWithCode(pkg, pkg.webhooks.verify(body + ' ', header, 's3cret', 300, { now: 1700000000 }), 'no_matching_signature');
    await rejectsWithCode(pkg, pkg.webhooks.verify(body, header, 's3cret', 300, { now: 1700000301 }), 'timestamp_too_old');
  });

  test('ESM and CJS export the same names', async () => {
    const esm = await import('@hookd/webhooks');
    assert.deepEqual(Object.keys(pkg).sort(), Object.keys(esm).sort());
    assert.deepEqual(Object.keys(pkg.webhooks).sort(), Object.keys(esm.webhooks).sort());
  });

  test('instanceof holds across the two builds loaded in one process', async () => {
    const esm = await import('@hookd/webhooks');
    assert.notEqual(esm.WebhookVerificationError, pkg.WebhookVerificationError, 'two copies really are loaded');
    const fromCjs = await pkg.webhooks.verify('{}', 't=1,v1=00', 'k', 300, { now: 1 }).catch((e) => e);
    const fromEsm = await esm.webhooks.verify('{}', 't=1,v1=00', 'k', 300, { now: 1 }).catch((e) => e);
    for (const [err, other] of [[fromCjs, esm], [fromEsm, pkg]]) {
      assert.ok(err instanceof other.WebhookVerificationError);
      assert.ok(err instanceof other.NoMatchingSignatureError);
      assert.ok(!(err instanceof other.TimestampTooOldError));
      assert.ok(err instanceof Error);
    }
    // Plain errors and look-alikes without the brand are not verification errors.
    assert.ok(!(new Error('x') instanceof pkg.WebhookVerificationError));
    assert.ok(!({ code: 'no_matching_signature' } instanceof pkg.NoMatchingSignatureError));
    assert.ok(!(null instanceof pkg.WebhookVerificationError));
  });

  test('error classes can be constructed and keep code and name', () => {
    const err = new pkg.TimestampTooNewError('ahead');
    assert.equal(err.code, 'timestamp_too_new');
    assert.equal(err.name, 'TimestampTooNewError');
    assert.equal(err.message, 'ahead');
    assert.ok(err instanceof pkg.WebhookVerificationError && err instanceof pkg.TimestampTooNewError);
    assert.ok(typeof err.stack === 'string');
    assert.deepEqual([...pkg.WEBHOOK_ERROR_CODES].sort(), [
      'invalid_body', 'malformed_header', 'missing_header', 'no_matching_signature', 'timestamp_too_new', 'timestamp_too_old',
    ]);
  });
});
