// Standard Webhooks (spec v1.0.0), symmetric signatures only:
//   webhook-id, webhook-timestamp,
//   webhook-signature: "v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>" [space-separated, any may match]
// key = base64-decode(secret without its optional "whsec_" prefix).

import { type RawBody, bodyBytes, parseEnvelope, signedContent } from './body.js';
import { hmacSha256 } from './crypto.js';
import { base64Decode, base64Encode, constantTimeEqual, utf8Encode } from './encoding.js';
import { MissingHeaderError, NoMatchingSignatureError } from './errors.js';
import { type WebhookHeaders, headerValues, singleValue } from './headers.js';
import { timestampText } from './kwork.js';
import {
  type Clock,
  DEFAULT_TOLERANCE_SECONDS,
  checkTolerance,
  checkToleranceArgument,
  nowSeconds,
  parseTimestamp,
} from './time.js';

const SECRET_PREFIX = 'whsec_';
const VERSION = 'v1';

/** hookd's standard-profile envelope (thin: receivers fetch details). */
export interface StandardEvent<TData = unknown> {
  /** Event id (evt_...). */
  id: string;
  type: string;
  subject: string;
  /** RFC 3339 time the event happened. */
  occurred_at: string;
  data: TData;
}

export interface StandardVerifyOptions {
  /** Seconds the timestamp may be off in either direction; default 300. */
  tolerance?: number;
  /** The clock to check the timestamp against (unix seconds or a Date); defaults to now. */
  now?: Clock;
}

/** The result of checking a signature without parsing the body. */
export interface StandardVerifiedMessage {
  /** The webhook-id header: the same on every retry, deduplicate on it. */
  id: string;
  timestamp: number;
  /** The body bytes that were verified. */
  body: Uint8Array;
}

function standardKey(secret: string): Uint8Array<ArrayBuffer> {
  if (typeof secret !== 'string') throw new TypeError('secret must be a string');
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = base64Decode(encoded);
  if (key === null || key.length === 0) {
    throw new TypeError('secret must be "whsec_" followed by non-empty base64 (the prefix is optional)');
  }
  return key;
}

async function standardSignature(key: Uint8Array<ArrayBuffer>, id: string, timestamp: string, body: Uint8Array): Promise<string> {
  return base64Encode(await hmacSha256(key, signedContent(`${id}.${timestamp}.`, body)));
}

/**
 * Checks headers present -> timestamp parses -> tolerance -> signature, without
 * parsing the body. Only `v1` entries are compared (the label exactly: `v1a`
 * and others are skipped).
 */
export async function verifyStandardSignature(
  rawBody: RawBody,
  headers: WebhookHeaders,
  secret: string,
  options: StandardVerifyOptions = {},
): Promise<StandardVerifiedMessage> {
  const key = standardKey(secret);
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE_SECONDS;
  checkToleranceArgument(tolerance);
  const body = bodyBytes(rawBody);
  const now = nowSeconds(options.now);

  const ids = headerValues(headers, 'webhook-id');
  const timestamps = headerValues(headers, 'webhook-timestamp');
  const signatureValues = headerValues(headers, 'webhook-signature');
  const missing = [
    ids.length === 0 ? 'webhook-id' : '',
    timestamps.length === 0 ? 'webhook-timestamp' : '',
    signatureValues.length === 0 ? 'webhook-signature' : '',
  ].filter(Boolean);
  if (missing.length > 0) throw new MissingHeaderError(`missing header: ${missing.join(', ')}`);
  const id = singleValue(ids, 'webhook-id');
  const rawTimestamp = singleValue(timestamps, 'webhook-timestamp');
  // Repeated signature headers are one list.
  const signatures = signatureValues.join(' ');

  const timestamp = parseTimestamp(rawTimestamp, 'webhook-timestamp');
  checkTolerance(timestamp, now, tolerance);

  // Signed as the integer's decimal form, as the official libraries do (the
  // same as the header for any timestamp without a sign or leading zeros).
  const expected = utf8Encode(await standardSignature(key, id, String(timestamp), body));
  let matched = false;
  for (const entry of signatures.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== VERSION) continue;
    if (constantTimeEqual(utf8Encode(entry.slice(comma + 1)), expected)) matched = true;
  }
  if (!matched) throw new NoMatchingSignatureError('webhook-signature: no v1 signature matches');
  return { id, timestamp, body };
}

/**
 * Verifies a Standard Webhooks request and returns its parsed envelope.
 *
 * @param rawBody the exact request body (string or bytes), before any JSON parsing
 * @param headers a Headers instance or a plain object (any header-name case)
 * @param secret the endpoint secret, `whsec_<base64>` (prefix optional)
 */
export async function verifyStandard<TData = unknown>(
  rawBody: RawBody,
  headers: WebhookHeaders,
  secret: string,
  options: StandardVerifyOptions = {},
): Promise<StandardEvent<TData>> {
  const verified = await verifyStandardSignature(rawBody, headers, secret, options);
  return parseEnvelope<StandardEvent<TData>>(rawBody, verified.body);
}

/**
 * Signs like a Standard Webhooks sender and returns the webhook-signature
 * value, `v1,<base64>`. The timestamp (a number, or a string holding an
 * integer) is signed in its decimal form, as the verifier checks it.
 */
export async function signStandard(secret: string, id: string, timestamp: number | string, rawBody: RawBody): Promise<string> {
  if (typeof id !== 'string' || id === '') throw new TypeError('id must be a non-empty string');
  const key = standardKey(secret);
  let seconds: number;
  try {
    seconds = typeof timestamp === 'string' ? parseTimestamp(timestamp, 'timestamp') : Number(timestampText(timestamp));
  } catch {
    throw new TypeError('timestamp must be an integer number of unix seconds');
  }
  const signature = await standardSignature(key, id, String(seconds), bodyBytes(rawBody));
  return `${VERSION},${signature}`;
}
