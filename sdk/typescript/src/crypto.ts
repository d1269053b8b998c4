// HMAC-SHA256 and Ed25519 through WebCrypto. Node 19+, Deno, Bun, browsers (secure
// contexts) and edge runtimes expose it as globalThis.crypto.subtle; Node 18
// does not by default, so there we load node:crypto's webcrypto lazily.

import { base64Encode } from './encoding.js';

type Subtle = Pick<SubtleCrypto, 'importKey' | 'sign' | 'verify'>;

let nodeSubtle: Promise<Subtle> | undefined;

function getSubtle(): Promise<Subtle> {
  const subtle = (globalThis as { crypto?: { subtle?: Subtle } }).crypto?.subtle;
  if (subtle) return Promise.resolve(subtle);
  nodeSubtle ??= loadNodeSubtle();
  return nodeSubtle;
}

async function loadNodeSubtle(): Promise<Subtle> {
  // A specifier in a variable keeps browser bundlers from trying to resolve it.
  const specifier = 'node:crypto';
  try {
    const mod = (await import(specifier)) as { webcrypto?: { subtle?: Subtle } };
    if (mod.webcrypto?.subtle) return mod.webcrypto.subtle;
  } catch {
    // fall through
  }
  nodeSubtle = undefined;
  throw new Error(
    '@hookd/webhooks: WebCrypto is not available (globalThis.crypto.subtle is missing; in a browser it needs a secure context)',
  );
}

export async function hmacSha256(key: Uint8Array<ArrayBuffer>, message: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const subtle = await getSubtle();
  const cryptoKey = await subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await subtle.sign('HMAC', cryptoKey, message));
}

/** A WebCrypto Ed25519 public key, imported once per verification. */
export async function ed25519PublicKey(raw: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  const subtle = await getSubtle();
  try {
    return await subtle.importKey('raw', raw, { name: 'Ed25519' }, false, ['verify']);
  } catch (err) {
    throw ed25519Unsupported(err);
  }
}

export async function ed25519Verify(key: CryptoKey, signature: Uint8Array<ArrayBuffer>, message: Uint8Array<ArrayBuffer>): Promise<boolean> {
  const subtle = await getSubtle();
  return subtle.verify({ name: 'Ed25519' }, key, signature, message);
}

/** Signs with an Ed25519 key given as its 32-byte seed and 32-byte public key. */
export async function ed25519Sign(seed: Uint8Array, publicKey: Uint8Array, message: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const subtle = await getSubtle();
  const jwk = { kty: 'OKP', crv: 'Ed25519', d: base64url(seed), x: base64url(publicKey) };
  let key: CryptoKey;
  try {
    key = await subtle.importKey('jwk', jwk, { name: 'Ed25519' }, false, ['sign']);
  } catch (err) {
    throw ed25519Unsupported(err);
  }
  return new Uint8Array(await subtle.sign({ name: 'Ed25519' }, key, message));
}

function ed25519Unsupported(err: unknown): Error {
  if ((err as { name?: string } | null)?.name === 'NotSupportedError') {
    return new Error('@hookd/webhooks: this runtime\'s WebCrypto has no Ed25519 (Node >= 18.4, Deno, Bun and current browsers have it)');
  }
  return err instanceof Error ? err : new Error(String(err));
}

function base64url(bytes: Uint8Array): string {
  return base64Encode(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
