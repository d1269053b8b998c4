// Standard Webhooks (spec v1.0.0):
//   webhook-id, webhook-timestamp,
//   webhook-signature: space-separated entries, any may match:
//     "v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>"
//       key = base64-decode(secret without its optional "whsec_" prefix)
//     "v1a,<base64 Ed25519("<id>.<timestamp>.<raw body>")>"
//       verified with "whpk_" + base64(32-byte public key); signed with
//       "whsk_" + base64(32-byte seed || 32-byte public key)

import { type RawBody, bodyBytes, parseEnvelope, signedContent } from './body.js';
import { ed25519PublicKey, ed25519Sign, ed25519Verify, hmacSha256 } from './crypto.js';
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
const PUBLIC_KEY_PREFIX = 'whpk_';
const SIGNING_KEY_PREFIX = 'whsk_';
const VERSION = 'v1';
const ASYMMETRIC_VERSION = 'v1a';
/** Ed25519 checks one header may cost: a sender signs with a few keys at most. */
const MAX_ASYMMETRIC_ENTRIES = 8;

/**
 * What verifies a Standard Webhooks message: a `whsec_` secret (checks `v1`
 * entries), a `whpk_` Ed25519 public key (checks `v1a` entries), or a list of
 * them, such as the old and the new key while the sender rotates.
 */
export type StandardKeys = string | readonly string[];

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

interface ParsedKeys {
  secrets: Uint8Array<ArrayBuffer>[];
  publicKeys: Uint8Array<ArrayBuffer>[];
}

function parseKeys(keys: StandardKeys): ParsedKeys {
  const list = typeof keys === 'string' ? [keys] : keys;
  if (!Array.isArray(list) || list.length === 0) {
    throw new TypeError('secret must be a whsec_ secret, a whpk_ public key, or a non-empty array of them');
  }
  const parsed: ParsedKeys = { secrets: [], publicKeys: [] };
  for (const key of list) {
    if (typeof key !== 'string') throw new TypeError('every key must be a string');
    if (key.startsWith(SIGNING_KEY_PREFIX)) {
      throw new TypeError('a whsk_ key is the sender\'s signing key and must stay with it; verify with its whpk_ public key');
    }
    if (key.startsWith(PUBLIC_KEY_PREFIX)) {
      const raw = base64Decode(key.slice(PUBLIC_KEY_PREFIX.length));
      if (raw === null || raw.length !== 32) throw new TypeError('a public key must be "whpk_" followed by the base64 of 32 bytes');
      parsed.publicKeys.push(raw);
    } else {
      parsed.secrets.push(standardKey(key));
    }
  }
  return parsed;
}

function describeKeys(keys: ParsedKeys): string {
  const parts: string[] = [];
  const s = keys.secrets.length;
  const p = keys.publicKeys.length;
  if (s === 1) parts.push('v1 signature matches');
  if (s > 1) parts.push(`v1 signature matches any of these ${s} secrets`);
  if (p === 1) parts.push('v1a signature matches the public key');
  if (p > 1) parts.push(`v1a signature matches any of these ${p} public keys`);
  return parts.join(' and no ');
}

async function matchesAny(keys: ParsedKeys, entries: string[], id: string, timestamp: number, body: Uint8Array): Promise<boolean> {
  // Signed as the integer's decimal form, as the official libraries do (the
  // same as the header for any timestamp without a sign or leading zeros).
  const ts = String(timestamp);
  for (const key of keys.secrets) {
    const expected = utf8Encode(await standardSignature(key, id, ts, body));
    let matched = false;
    for (const entry of entries) {
      const comma = entry.indexOf(',');
      if (comma < 0 || entry.slice(0, comma) !== VERSION) continue;
      if (constantTimeEqual(utf8Encode(entry.slice(comma + 1)), expected)) matched = true;
    }
    if (matched) return true;
  }
  if (keys.publicKeys.length === 0) return false;
  const signatures: Uint8Array<ArrayBuffer>[] = [];
  for (const entry of entries) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== ASYMMETRIC_VERSION) continue;
    const value = entry.slice(comma + 1);
    const sig = base64Decode(value);
    // Only the canonical encoding of a 64-byte signature counts.
    if (sig === null || sig.length !== 64 || base64Encode(sig) !== value) continue;
    signatures.push(sig);
    if (signatures.length === MAX_ASYMMETRIC_ENTRIES) break;
  }
  if (signatures.length === 0) return false;
  const message = signedContent(`${id}.${ts}.`, body);
  for (const raw of keys.publicKeys) {
    const key = await ed25519PublicKey(raw);
    for (const sig of signatures) {
      if (await ed25519Verify(key, sig, message)) return true;
    }
  }
  return false;
}

async function standardSignature(key: Uint8Array<ArrayBuffer>, id: string, timestamp: string, body: Uint8Array): Promise<string> {
  return base64Encode(await hmacSha256(key, signedContent(`${id}.${timestamp}.`, body)));
}

/**
 * Checks headers present -> timestamp parses -> tolerance -> signature, without
 * parsing the body. A secret is compared with `v1` entries only, a public key
 * with `v1a` entries only (the label exactly); any match of any key passes.
 */
export async function verifyStandardSignature(
  rawBody: RawBody,
  headers: WebhookHeaders,
  secret: StandardKeys,
  options: StandardVerifyOptions = {},
): Promise<StandardVerifiedMessage> {
  const keys = parseKeys(secret);
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

  if (!(await matchesAny(keys, signatures.split(' '), id, timestamp, body))) {
    throw new NoMatchingSignatureError(`webhook-signature: no ${describeKeys(keys)}`);
  }
  return { id, timestamp, body };
}

/**
 * Verifies a Standard Webhooks request and returns its parsed envelope.
 *
 * @param rawBody the exact request body (string or bytes), before any JSON parsing
 * @param headers a Headers instance or a plain object (any header-name case)
 * @param secret the endpoint secret, `whsec_<base64>` (prefix optional), its
 *   Ed25519 public key `whpk_<base64>`, or a list of them (during a rotation)
 */
export async function verifyStandard<TData = unknown>(
  rawBody: RawBody,
  headers: WebhookHeaders,
  secret: StandardKeys,
  options: StandardVerifyOptions = {},
): Promise<StandardEvent<TData>> {
  const verified = await verifyStandardSignature(rawBody, headers, secret, options);
  return parseEnvelope<StandardEvent<TData>>(rawBody, verified.body);
}

/**
 * Signs like a Standard Webhooks sender and returns one webhook-signature
 * entry: `v1,<base64>` for a `whsec_` secret, `v1a,<base64>` for a `whsk_`
 * Ed25519 signing key (join several entries with a space). The timestamp (a
 * number, or a string holding an integer) is signed in its decimal form, as
 * the verifier checks it.
 */
export async function signStandard(secret: string, id: string, timestamp: number | string, rawBody: RawBody): Promise<string> {
  if (typeof id !== 'string' || id === '') throw new TypeError('id must be a non-empty string');
  let seconds: number;
  try {
    seconds = typeof timestamp === 'string' ? parseTimestamp(timestamp, 'timestamp') : Number(timestampText(timestamp));
  } catch {
    throw new TypeError('timestamp must be an integer number of unix seconds');
  }
  if (typeof secret === 'string' && secret.startsWith(SIGNING_KEY_PREFIX)) {
    const raw = base64Decode(secret.slice(SIGNING_KEY_PREFIX.length));
    if (raw === null || raw.length !== 64) {
      throw new TypeError('a signing key must be "whsk_" followed by the base64 of 64 bytes (seed, then public key)');
    }
    const message = signedContent(`${id}.${seconds}.`, bodyBytes(rawBody));
    return `${ASYMMETRIC_VERSION},${base64Encode(await ed25519Sign(raw.subarray(0, 32), raw.subarray(32), message))}`;
  }
  if (typeof secret === 'string' && secret.startsWith(PUBLIC_KEY_PREFIX)) {
    throw new TypeError('a whpk_ public key verifies but cannot sign; sign with its whsk_ signing key');
  }
  const key = standardKey(secret);
  const signature = await standardSignature(key, id, String(seconds), bodyBytes(rawBody));
  return `${VERSION},${signature}`;
}
