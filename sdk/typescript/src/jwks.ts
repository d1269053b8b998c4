// Verifying Standard Webhooks v1a (Ed25519) signatures with the public keys
// a sender publishes as a JSON Web Key Set (RFC 7517; Ed25519 keys as in
// RFC 8037: kty "OKP", crv "Ed25519", x = base64url of the 32-byte key).
// hookd publishes each owner's at /.well-known/hookd/<owner>/jwks.json,
// with the endpoint_id of each key and, during a rotation, the old key too.

import type { RawBody } from './body.js';
import { base64Decode, base64Encode } from './encoding.js';
import { NoMatchingSignatureError } from './errors.js';
import type { WebhookHeaders } from './headers.js';
import { type StandardEvent, type StandardVerifyOptions, verifyStandard } from './standard.js';

export interface JwksVerifierOptions extends StandardVerifyOptions {
  /** The key set's URL, e.g. https://hookd.example.com/.well-known/hookd/acme/jwks.json */
  url: string;
  /** Take only this endpoint's keys (hookd's endpoint_id member); default: every key. */
  endpointId?: string;
  /** Seconds a fetched set is used; default 300. */
  cacheSeconds?: number;
  /** A signature no cached key verifies refetches the set at most this often, in seconds; default 30. */
  minRefetchSeconds?: number;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
}

/** A verifier bound to one key set: call it like verifyStandard, without the keys. */
export type JwksVerifier = <TData = unknown>(rawBody: RawBody, headers: WebhookHeaders) => Promise<StandardEvent<TData>>;

interface Jwk {
  kty?: string;
  crv?: string;
  x?: string;
  use?: string;
  endpoint_id?: string;
}

/** base64url (unpadded) to bytes; null when it is not base64url. */
function base64UrlDecode(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  return base64Decode(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
}

/** The whpk_ keys of a JWKS document (other keys are skipped). */
export function jwksPublicKeys(doc: unknown, endpointId?: string): string[] {
  const keys = (doc as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) throw new TypeError('not a JWK Set: no "keys" array');
  const out: string[] = [];
  for (const k of keys as Jwk[]) {
    if (k?.kty !== 'OKP' || k.crv !== 'Ed25519' || (k.use !== undefined && k.use !== 'sig')) continue;
    if (endpointId !== undefined && k.endpoint_id !== endpointId) continue;
    const raw = typeof k.x === 'string' ? base64UrlDecode(k.x) : null;
    if (raw === null || raw.length !== 32) continue;
    out.push('whpk_' + base64Encode(raw));
  }
  return out;
}

/**
 * Returns a verifier that checks Standard Webhooks requests against the
 * Ed25519 keys of a JWKS URL: fetched on first use, cached for
 * cacheSeconds, and refetched (at most every minRefetchSeconds) when no
 * cached key matches, so a rotation's new key is picked up at once. When
 * the set cannot be fetched again, the last one keeps verifying.
 */
export function createJwksVerifier(options: JwksVerifierOptions): JwksVerifier {
  const { url, endpointId, cacheSeconds = 300, minRefetchSeconds = 30, ...verifyOptions } = options;
  const doFetch = options.fetch ?? globalThis.fetch;
  if (typeof url !== 'string' || url === '') throw new TypeError('url must be the key set URL');
  let keys: string[] | null = null;
  let fetchedAt = 0;
  let triedAt = -Infinity;
  let inflight: Promise<string[]> | null = null;

  const load = (): Promise<string[]> => {
    inflight ??= (async () => {
      triedAt = Date.now();
      try {
        const resp = await doFetch(url, { headers: { accept: 'application/jwk-set+json, application/json' } });
        if (!resp.ok) throw new Error(`JWKS ${url}: HTTP ${resp.status}`);
        keys = jwksPublicKeys(await resp.json(), endpointId);
        fetchedAt = Date.now();
        return keys;
      } catch (err) {
        if (keys !== null) return keys; // keep verifying with the last set
        throw err;
      } finally {
        inflight = null;
      }
    })();
    return inflight;
  };

  const check = <TData>(rawBody: RawBody, headers: WebhookHeaders, current: string[]): Promise<StandardEvent<TData>> => {
    if (current.length === 0) {
      return Promise.reject(new NoMatchingSignatureError(`webhook-signature: the key set at ${url} has no Ed25519 key${endpointId ? ` of ${endpointId}` : ''}`));
    }
    return verifyStandard<TData>(rawBody, headers, current, verifyOptions);
  };

  return async <TData = unknown>(rawBody: RawBody, headers: WebhookHeaders): Promise<StandardEvent<TData>> => {
    const cached = keys !== null && Date.now() - fetchedAt < cacheSeconds * 1000 ? keys : await load();
    try {
      return await check<TData>(rawBody, headers, cached);
    } catch (err) {
      if (!(err instanceof NoMatchingSignatureError) || Date.now() - triedAt < minRefetchSeconds * 1000) throw err;
      return check<TData>(rawBody, headers, await load());
    }
  };
}
