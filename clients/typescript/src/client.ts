import { errorOf } from './errors.js';
import { Ops } from './ops.js';
import type { CallOptions, OpSpec } from './spec.js';

/** How a 429 or 503 answer is retried. */
export interface RetryOptions {
  /** Retries after the first try (default 3; 0 for none). */
  attempts?: number;
  /** The first wait without Retry-After, doubled per retry (default 500 ms). */
  backoffMs?: number;
  /** The longest wait: a longer Retry-After is not waited for, the error is thrown (default 30 s). */
  maxWaitMs?: number;
}

export interface ClientOptions {
  /** The hookd to call, e.g. "https://hookd.example.com". */
  baseUrl: string;
  /** An API key (hookd apikey create). */
  apiKey: string;
  /** Operator keys: the owner every owner-scoped op acts on (Hookd-Owner). */
  owner?: string;
  retry?: RetryOptions;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
}

/**
 * A client of hookd's publish and admin API: client.events.publish(…),
 * client.webhooks.create(…), one method per op of hookd's /openapi.json.
 * 429 and 503 answers are retried after their Retry-After; every publish
 * carries an idempotency key, so a retry never publishes twice; a failed
 * call throws a HookdError with hookd's error code.
 */
export class HookdClient extends Ops {
  readonly #options: ClientOptions;
  readonly #base: string;

  constructor(options: ClientOptions) {
    super();
    this.#options = options;
    this.#base = options.baseUrl.replace(/\/+$/, '');
  }

  /** A copy of the client acting on owner (operator keys). */
  withOwner(owner: string): HookdClient {
    return new HookdClient({ ...this.#options, owner });
  }

  protected override async call<T>(spec: OpSpec, input: object | undefined, options: CallOptions | undefined): Promise<T> {
    const fields: Record<string, unknown> = { ...(input ?? {}) };
    const path = spec.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const v = fields[name];
      delete fields[name];
      if (v === undefined || v === null || v === '') throw new TypeError(`${spec.op}: ${name} is required`);
      return encodeURIComponent(String(v));
    });
    const url = new URL(this.#base + path);
    for (const name of spec.query) {
      const v = fields[name];
      delete fields[name];
      if (v !== undefined && v !== null && v !== '') url.searchParams.set(name, String(v));
    }
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.#options.apiKey}`,
      Accept: 'application/json',
    };
    for (const [name, header] of Object.entries(spec.headers)) {
      const v = fields[name];
      delete fields[name];
      if (v !== undefined && v !== null && v !== '') headers[header] = String(v);
    }
    if (this.#options.owner) headers['Hookd-Owner'] = this.#options.owner;
    if (spec.op === 'events.publish' && !headers['Idempotency-Key']) {
      // A retried publish must not publish twice, even when the answer
      // lost was a proxy's 503 after hookd committed.
      headers['Idempotency-Key'] = newKey();
    }
    if (spec.op === 'events.publish_batch' && Array.isArray(fields['events'])) {
      fields['events'] = (fields['events'] as Record<string, unknown>[]).map((e) =>
        e.idempotency_key ? e : { ...e, idempotency_key: newKey() });
    }
    let body: string | undefined;
    if (spec.body) {
      body = JSON.stringify(fields);
      headers['Content-Type'] = 'application/json';
    }
    return this.#send<T>(spec, url, headers, body, options?.signal);
  }

  async #send<T>(spec: OpSpec, url: URL, headers: Record<string, string>, body: string | undefined, signal: AbortSignal | undefined): Promise<T> {
    const retry = this.#options.retry ?? {};
    const attempts = retry.attempts ?? 3;
    const maxWait = retry.maxWaitMs ?? 30_000;
    let backoff = retry.backoffMs ?? 500;
    const doFetch = this.#options.fetch ?? globalThis.fetch;
    for (let attempt = 0; ; attempt++) {
      const init: RequestInit = { method: spec.method, headers };
      if (body !== undefined) init.body = body;
      if (signal) init.signal = signal;
      const res = await doFetch(url, init);
      if (res.ok) {
        if (res.status === 204) {
          await res.body?.cancel();
          return undefined as T;
        }
        return (await res.json()) as T;
      }
      const err = await errorOf(spec.op, res);
      if ((res.status !== 429 && res.status !== 503) || attempt >= attempts) throw err;
      const wait = err.retryAfterMs ?? backoff;
      if (wait > maxWait) throw err;
      backoff *= 2;
      await sleep(wait, signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A random idempotency key. */
function newKey(): string {
  const b = new Uint8Array(16);
  globalThis.crypto.getRandomValues(b);
  return 'idem_' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
