// The stdin verifier script that the Go side drives for cross-language tests.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { signKwork } from '@hookd/webhooks';
import { vectors } from './helpers.mjs';

const script = fileURLToPath(new URL('./verify-stdin.mjs', import.meta.url));

function verifyStdin(input) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'pipe'], timeout: 15_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(typeof input === 'string' ? input : JSON.stringify(input));
  });
}

describe('test/verify-stdin.mjs', { timeout: 60_000 }, () => {
  const event = { id: 'evt_1', type: 'app.installed', createdAt: '2026-10-28T12:00:00Z', apiVersion: '2026-10-28', tenant: 't', environment: 'test', app: 'a', data: {} };
  const body = JSON.stringify(event);

  test('kwork: valid -> event JSON, exit 0', async () => {
    const header = await signKwork('sekrit', 1700000000, body);
    const r = await verifyStdin({ scheme: 'kwork', secret: 'sekrit', headers: { 'X-Kwork-Signature': header }, body, now: 1700000000 });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), event);
  });

  test('kwork: body_base64 carries exact bytes; the wall clock is the default', async () => {
    const now = Math.floor(Date.now() / 1000);
    const header = await signKwork('sekrit', now, body);
    const r = await verifyStdin({ scheme: 'kwork', secret: 'sekrit', headers: { 'x-kwork-signature': header }, body_base64: Buffer.from(body).toString('base64') });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), event);
  });

  test('kwork: tampered / stale / missing -> code, exit 1', async () => {
    const header = await signKwork('sekrit', 1700000000, body);
    for (const [input, code] of [
      [{ body: body + ' ', headers: { 'X-Kwork-Signature': header }, now: 1700000000 }, 'no_matching_signature'],
      [{ body, headers: { 'X-Kwork-Signature': header }, now: 1700000400 }, 'timestamp_too_old'],
      [{ body, headers: { 'X-Kwork-Signature': header }, now: 1700000400, tolerance: 600 }, 'valid'],
      [{ body, headers: {}, now: 1700000000 }, 'missing_header'],
      [{ body, headers: { 'X-Kwork-Signature': 'v1=abc' }, now: 1700000000 }, 'malformed_header'],
    ]) {
      const r = await verifyStdin({ scheme: 'kwork', secret: 'sekrit', ...input });
      if (code === 'valid') {
        assert.equal(r.code, 0, r.stderr);
      } else {
        assert.deepEqual([r.code, r.stdout], [1, `${code}\n`]);
      }
    }
  });

  test('standard: the upstream vector, and a tampered one', async () => {
    const c = vectors.cases.find((x) => x.name === 'sign_vector_default');
    const headers = { 'Webhook-Id': c.msg_id, 'Webhook-Timestamp': c.timestamp, 'Webhook-Signature': c.signature_header };
    const ok = await verifyStdin({ scheme: 'standard', secret: c.secret, headers, body: c.payload, now: c.now });
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout), JSON.parse(c.payload));
    const bad = await verifyStdin({ scheme: 'standard', secret: c.secret, headers, body: c.payload + ' ', now: c.now });
    assert.deepEqual([bad.code, bad.stdout], [1, 'no_matching_signature\n']);
  });

  test('bad input -> message on stderr, exit 2', async () => {
    for (const input of ['not json', { scheme: 'other', secret: 's', body: '{}' }, { scheme: 'kwork', secret: '', body: '{}', headers: { 'x-kwork-signature': 't=1,v1=00' } }, { scheme: 'kwork', secret: 's' }]) {
      const r = await verifyStdin(input);
      assert.equal(r.code, 2, JSON.stringify(input));
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /^verify-stdin: /);
    }
  });
});
