// The kwork scheme (seed 002):
//   X-Kwork-Signature: t=<unix seconds>,v1=<lowercase hex HMAC-SHA256(secret, "<t>.<raw body>")>
// The key is the UTF-8 bytes of the secret exactly as given to the owner; <t>
// is signed as it appears in the header. The accepted set is that of the
// seed's reference verifier (verifyPlainHMAC), as in hookd's Go package.

import { type RawBody, bodyBytes, parseEnvelope, signedContent } from './body.js';
import { hmacSha256 } from './crypto.js';
import { constantTimeEqual, hexEncode, utf8Encode } from './encoding.js';
import { MalformedHeaderError, MissingHeaderError, NoMatchingSignatureError } from './errors.js';
import {
  type Clock,
  DEFAULT_TOLERANCE_SECONDS,
  checkTolerance,
  checkToleranceArgument,
  nowSeconds,
  parseTimestamp,
} from './time.js';

export const KWORK_SIGNATURE_HEADER = 'X-Kwork-Signature';

/** The kwork event envelope. */
export interface KworkEvent<TData = unknown> {
  /** Unique event id; the same on every retry: deduplicate on it. */
  id: string;
  /** Event type, e.g. "app.installed"; equals the X-Kwork-Event header. */
  type: string;
  /** When the event happened, RFC 3339 UTC. */
  createdAt: string;
  /** API version that produced the event. */
  apiVersion: string;
  /** Tenant that triggered the event. */
  tenant: string;
  environment: 'test' | 'live';
  /** The receiving app's id. */
  app: string;
  data: TData;
}

export interface KworkVerifyOptions {
  /** The clock to check the timestamp against (unix seconds or a Date); defaults to now. */
  now?: Clock;
}

export interface KworkSignatureHeader {
  /** The `t` value exactly as sent (it is part of the signed content). */
  rawTimestamp: string;
  timestamp: number;
  /** The `v1` value. */
  signature: string;
}

/** The result of checking a signature without parsing the body. */
export interface KworkVerifiedMessage {
  timestamp: number;
  /** The body bytes that were verified. */
  body: Uint8Array;
}

/**
 * Parses `t=<ts>,v1=<hex>` exactly like seed 002's reference verifier: parts
 * are separated by commas and split at their first '='; parts without '=' and
 * unknown keys are ignored; a repeated key keeps its last value; nothing is
 * trimmed. No `t`, no `v1` or a `t` that is not an integer is malformed.
 */
export function parseKworkSignatureHeader(header: string | null | undefined): KworkSignatureHeader {
  if (header !== undefined && header !== null && typeof header !== 'string') {
    throw new TypeError('signatureHeader must be a string');
  }
  if (header === undefined || header === null || header === '') {
    throw new MissingHeaderError(`${KWORK_SIGNATURE_HEADER} header is missing`);
  }
  let rawTimestamp: string | undefined;
  let signature: string | undefined;
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq);
    if (key === 't') rawTimestamp = part.slice(eq + 1);
    else if (key === 'v1') signature = part.slice(eq + 1);
  }
  if (rawTimestamp === undefined) throw new MalformedHeaderError(`${KWORK_SIGNATURE_HEADER}: no t= part`);
  if (signature === undefined) throw new MalformedHeaderError(`${KWORK_SIGNATURE_HEADER}: no v1= part`);
  const timestamp = parseTimestamp(rawTimestamp, KWORK_SIGNATURE_HEADER);
  return { rawTimestamp, timestamp, signature };
}

function kworkKey(secret: string): Uint8Array<ArrayBuffer> {
  if (typeof secret !== 'string' || secret === '') throw new TypeError('secret must be a non-empty string');
  return utf8Encode(secret);
}

async function kworkHex(key: Uint8Array<ArrayBuffer>, rawTimestamp: string, body: Uint8Array): Promise<string> {
  return hexEncode(await hmacSha256(key, signedContent(`${rawTimestamp}.`, body)));
}

/**
 * Checks header presence, format, timestamp tolerance and signature (in that
 * order) without parsing the body.
 */
export async function verifyKworkSignature(
  rawBody: RawBody,
  signatureHeader: string | null | undefined,
  secret: string,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
  options: KworkVerifyOptions = {},
): Promise<KworkVerifiedMessage> {
  const key = kworkKey(secret);
  checkToleranceArgument(toleranceSeconds);
  const body = bodyBytes(rawBody);
  const now = nowSeconds(options.now);

  const parsed = parseKworkSignatureHeader(signatureHeader);
  checkTolerance(parsed.timestamp, now, toleranceSeconds);

  const expected = utf8Encode(await kworkHex(key, parsed.rawTimestamp, body));
  if (!constantTimeEqual(utf8Encode(parsed.signature), expected)) {
    throw new NoMatchingSignatureError(`${KWORK_SIGNATURE_HEADER}: v1 was not made with this secret over this body`);
  }
  return { timestamp: parsed.timestamp, body };
}

/**
 * Verifies a kwork webhook and returns its parsed envelope.
 *
 * @param rawBody the exact request body (string or bytes), before any JSON parsing
 * @param signatureHeader the X-Kwork-Signature header value
 * @param secret the subscription's webhook secret, as given
 * @param toleranceSeconds maximum |now - t|, default 300
 */
export async function verifyKwork<TData = unknown>(
  rawBody: RawBody,
  signatureHeader: string | null | undefined,
  secret: string,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
  options: KworkVerifyOptions = {},
): Promise<KworkEvent<TData>> {
  const verified = await verifyKworkSignature(rawBody, signatureHeader, secret, toleranceSeconds, options);
  return parseEnvelope<KworkEvent<TData>>(rawBody, verified.body);
}

/**
 * Signs a body the way hookd's kwork profile does and returns the whole
 * X-Kwork-Signature value, `t=<timestamp>,v1=<hex>`. A string timestamp is used verbatim.
 */
export async function signKwork(secret: string, timestamp: number | string, rawBody: RawBody): Promise<string> {
  const rawTimestamp = timestampText(timestamp);
  const hex = await kworkHex(kworkKey(secret), rawTimestamp, bodyBytes(rawBody));
  return `t=${rawTimestamp},v1=${hex}`;
}

export function timestampText(timestamp: number | string): string {
  if (typeof timestamp === 'string') return timestamp;
  if (Number.isSafeInteger(timestamp)) return String(timestamp);
  throw new TypeError('timestamp must be an integer number of unix seconds, or a string');
}
