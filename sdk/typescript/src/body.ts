import { concatBytes, utf8Decode, utf8Encode } from './encoding.js';
import { InvalidBodyError } from './errors.js';

/** The exact request body: the string as received, or its bytes. */
export type RawBody = string | Uint8Array;

export function bodyBytes(rawBody: RawBody): Uint8Array {
  if (typeof rawBody === 'string') return utf8Encode(rawBody);
  if (ArrayBuffer.isView(rawBody)) {
    return new Uint8Array(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  }
  throw new TypeError('rawBody must be the raw request body as a string or a Uint8Array (not parsed JSON)');
}

/** prefix (as UTF-8) followed by the body bytes: the message that is signed. */
export function signedContent(prefix: string, body: Uint8Array): Uint8Array<ArrayBuffer> {
  return concatBytes(utf8Encode(prefix), body);
}

/** Parses a verified body; the top level must be a JSON object. */
export function parseEnvelope<T>(rawBody: RawBody, bytes: Uint8Array): T {
  const text = typeof rawBody === 'string' ? rawBody : utf8Decode(bytes);
  if (text === null) throw new InvalidBodyError('body is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidBodyError('body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidBodyError('body is not a JSON object');
  }
  return value as T;
}
