/** hookd's error codes (error.code of every error answer). */
export type ErrorCode =
  | 'invalid'
  | 'bad_request'
  | 'not_found'
  | 'conflict'
  | 'unauthorized'
  | 'forbidden'
  | 'too_large'
  | 'internal'
  | 'unavailable';

/**
 * hookd's answer to a call that failed: the HTTP status, hookd's error code
 * and its message (it says what is wrong and how to fix it).
 */
export class HookdError extends Error {
  override readonly name = 'HookdError';
  /** The op called, e.g. "webhooks.create". */
  readonly op: string;
  readonly status: number;
  readonly code: ErrorCode;
  /** The answer's Retry-After in milliseconds (429 and 503), undefined if none. */
  readonly retryAfterMs: number | undefined;

  constructor(op: string, status: number, code: ErrorCode, message: string, retryAfterMs: number | undefined) {
    super(`${op}: hookd answered ${status} ${code}: ${message}`);
    this.op = op;
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Reads an error answer; one that is not hookd's keeps its status and text. */
export async function errorOf(op: string, res: Response): Promise<HookdError> {
  const text = await res.text();
  let code = codeOfStatus(res.status);
  let message = text.trim().slice(0, 200);
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (body.error && typeof body.error.code === 'string') {
      code = body.error.code as ErrorCode;
      message = String(body.error.message ?? '');
    }
  } catch {
    // not hookd's answer (a proxy's page): keep the text
  }
  return new HookdError(op, res.status, code, message, retryAfter(res.headers.get('Retry-After'), Date.now()));
}

/** Retry-After in milliseconds: seconds or an HTTP date. */
export function retryAfter(value: string | null, now: number): number | undefined {
  const v = (value ?? '').trim();
  if (v === '') return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(at - now, 0);
}

function codeOfStatus(status: number): ErrorCode {
  switch (status) {
    case 422: return 'invalid';
    case 400: return 'bad_request';
    case 404: return 'not_found';
    case 409: return 'conflict';
    case 401: return 'unauthorized';
    case 403: return 'forbidden';
    case 413: return 'too_large';
    case 429:
    case 503: return 'unavailable';
    default: return 'internal';
  }
}
