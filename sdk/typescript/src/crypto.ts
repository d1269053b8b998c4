// HMAC-SHA256 through WebCrypto. Node 19+, Deno, Bun, browsers (secure
// contexts) and edge runtimes expose it as globalThis.crypto.subtle; Node 18
// does not by default, so there we load node:crypto's webcrypto lazily.

type Subtle = Pick<SubtleCrypto, 'importKey' | 'sign'>;

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
