#!/usr/bin/env node
// Verifies one webhook read from standard input with the built ESM package, for
// cross-language tests (the Go side signs, this side verifies).
//
// Input, one JSON object:
//   {
//     "scheme":  "kwork" | "standard",
//     "secret":  "...",                        // kwork: as given; standard: whsec_<base64>
//     "headers": { "X-Kwork-Signature": "..." } // or webhook-id / -timestamp / -signature; any case
//     "body":    "<raw body>",                  // or "body_base64": "<base64 of the raw bytes>"
//     "now":       1700000000,                  // optional: unix seconds to verify at (default: the clock)
//     "tolerance": 300                          // optional, seconds
//   }
// Output: the verified event as one line of JSON, exit 0; or the error code
// (missing_header, malformed_header, no_matching_signature, timestamp_too_old,
// timestamp_too_new, invalid_body), exit 1. Bad input: a message on stderr, exit 2.
//
// Needs `npm run build` first.
import { WebhookVerificationError, verifyKwork, verifyStandard } from '@hookd/webhooks';

function usage(message) {
  process.stderr.write(`verify-stdin: ${message}\n`);
  process.exit(2);
}

let input;
try {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
} catch (err) {
  usage(`stdin is not JSON: ${err.message}`);
}
if (typeof input !== 'object' || input === null) usage('stdin must be a JSON object');

const { scheme, secret, headers = {}, now, tolerance } = input;
if (typeof headers !== 'object' || headers === null) usage('"headers" must be an object');
let body;
if (typeof input.body_base64 === 'string') body = new Uint8Array(Buffer.from(input.body_base64, 'base64'));
else if (typeof input.body === 'string') body = input.body;
else usage('give "body" (string) or "body_base64"');

try {
  let event;
  if (scheme === 'kwork') {
    const signature = Object.entries(headers).find(([name]) => name.toLowerCase() === 'x-kwork-signature')?.[1];
    event = await verifyKwork(body, signature, secret, tolerance ?? 300, now === undefined ? {} : { now });
  } else if (scheme === 'standard') {
    event = await verifyStandard(body, headers, secret, {
      ...(tolerance === undefined ? {} : { tolerance }),
      ...(now === undefined ? {} : { now }),
    });
  } else {
    usage('"scheme" must be "kwork" or "standard"');
  }
  process.stdout.write(`${JSON.stringify(event)}\n`);
  process.exitCode = 0;
} catch (err) {
  if (err instanceof WebhookVerificationError) {
    process.stdout.write(`${err.code}\n`);
    process.exitCode = 1;
  } else {
    usage(err instanceof Error ? err.message : String(err));
  }
}
