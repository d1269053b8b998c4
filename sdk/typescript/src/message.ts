// Verifying a message hookd sent to a broker (docs/destinations.md): the
// same body and signature headers as a webhook, with the headers in the
// broker's shape.
import type { RawBody } from './body.js';
import { utf8Decode } from './encoding.js';
import { KWORK_SIGNATURE_HEADER, verifyKwork, type KworkEvent, type KworkVerifyOptions } from './kwork.js';
import { verifyStandard, type StandardEvent, type StandardKeys, type StandardVerifyOptions } from './standard.js';

/**
 * A message's headers as brokers' clients give them: an object (amqplib's
 * `msg.properties.headers`, a Redis stream entry's fields) whose values are
 * strings or bytes, or a list of `{ key, value }` (KafkaJS, franz-go style
 * record headers).
 */
export type MessageHeaders =
  | { readonly [name: string]: unknown }
  | ReadonlyArray<{ readonly key: string; readonly value: unknown }>;

/** The message's headers as a plain object of strings, names lower-cased. */
export function messageHeaders(headers: MessageHeaders): Record<string, string> {
  if (typeof headers !== 'object' || headers === null) throw new TypeError('headers must be an object or a list of { key, value }');
  const entries: [string, unknown][] = Array.isArray(headers)
    ? (headers as ReadonlyArray<{ key: string; value: unknown }>).map((h) => [h.key, h.value])
    : Object.entries(headers);
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    const text = typeof value === 'string' ? value : value instanceof Uint8Array ? utf8Decode(value) : null;
    if (typeof name === 'string' && text !== null) out[name.toLowerCase()] = text;
  }
  return out;
}

/**
 * Verifies a message hookd sent to a queue or stream and returns its
 * envelope. The profile is read from the headers: `x-kwork-signature`
 * means kwork (secret: the subscription's secret), else Standard Webhooks
 * (secret: `whsec_…`, a `whpk_…` key, or a list during a rotation).
 */
export async function verifyMessage<TData = unknown>(
  rawBody: RawBody,
  headers: MessageHeaders,
  secret: StandardKeys,
  options: StandardVerifyOptions & KworkVerifyOptions = {},
): Promise<StandardEvent<TData> | KworkEvent<TData>> {
  const h = messageHeaders(headers);
  const kwork = h[KWORK_SIGNATURE_HEADER.toLowerCase()];
  if (kwork !== undefined) {
    if (typeof secret !== 'string') throw new TypeError('a kwork message is verified with one secret string');
    return verifyKwork<TData>(rawBody, kwork, secret, options.tolerance, options.now === undefined ? {} : { now: options.now });
  }
  return verifyStandard<TData>(rawBody, h, secret, options);
}
