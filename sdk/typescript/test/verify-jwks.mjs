#!/usr/bin/env node
// Verifies webhooks read from standard input against a JWKS URL with one
// cached verifier (createJwksVerifier), in order, for the cross-language
// JWKS test (hookd publishes the set and delivers; this side verifies).
//
// Input, one JSON object:
//   { "url": "http://127.0.0.1:8080/.well-known/hookd/acme/jwks.json",
//     "endpoint_id": "ep_...",                       // optional
//     "messages": [ { "headers": {...}, "body": "<raw body>" }, ... ] }
// Output: one line per message, "ok <event id>" or "error <code>"; exit 0.
// Bad input: a message on stderr, exit 2.
//
// Needs `npm run build` first.
import { WebhookVerificationError, createJwksVerifier } from '@hookd/webhooks';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
let input;
try {
  input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
} catch (err) {
  process.stderr.write(`verify-jwks: stdin is not JSON: ${err.message}\n`);
  process.exit(2);
}
const verify = createJwksVerifier({ url: input.url, endpointId: input.endpoint_id, minRefetchSeconds: 0 });
for (const m of input.messages ?? []) {
  try {
    const ev = await verify(m.body, m.headers);
    process.stdout.write(`ok ${ev.id}\n`);
  } catch (err) {
    if (!(err instanceof WebhookVerificationError)) throw err;
    process.stdout.write(`error ${err.code}\n`);
  }
}
