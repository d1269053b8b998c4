/**
 * Verification errors. Every failure to verify a webhook is a
 * WebhookVerificationError with a `code`; each code also has its own subclass.
 *
 * Programmer errors (an empty or undecodable secret, a negative tolerance, a body
 * that is neither a string nor bytes) are thrown as TypeError instead: they say
 * the receiver is misconfigured, not that the request is bad.
 */

export type WebhookErrorCode =
  | 'missing_header'
  | 'malformed_header'
  | 'no_matching_signature'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'invalid_body';

export const WEBHOOK_ERROR_CODES: readonly WebhookErrorCode[] = Object.freeze([
  'missing_header',
  'malformed_header',
  'no_matching_signature',
  'timestamp_too_old',
  'timestamp_too_new',
  'invalid_body',
]);

// A registry symbol, so an error thrown by the CommonJS build is still an
// `instanceof` the classes of the ESM build (and the other way round) when an
// application ends up loading both copies of this package.
const BRAND: unique symbol = Symbol.for('@hookd/webhooks.WebhookVerificationError') as never;

type AnyConstructor<T> = abstract new (...args: never[]) => T;

export class WebhookVerificationError extends Error {
  readonly code: WebhookErrorCode;

  constructor(code: WebhookErrorCode, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /**
   * Branded instances match by code (for subclasses) or always (for the base
   * class), whichever copy of the package created them.
   */
  static override [Symbol.hasInstance]<T>(this: AnyConstructor<T>, value: unknown): value is T {
    if (typeof value !== 'object' || value === null) return false;
    if ((value as { [BRAND]?: unknown })[BRAND] !== true) {
      return Function.prototype[Symbol.hasInstance].call(this, value);
    }
    const code = (this as unknown as { readonly errorCode?: WebhookErrorCode }).errorCode;
    return code === undefined || (value as WebhookVerificationError).code === code;
  }
}

/**
 * The base of each code's own class: `static errorCode` makes `instanceof`
 * match by code across copies of the package (see Symbol.hasInstance above),
 * and `code` is typed as that one code.
 */
function errorOfCode<C extends WebhookErrorCode>(code: C, name: string) {
  return class extends WebhookVerificationError {
    static readonly errorCode: C = code;
    declare readonly code: C;
    constructor(message: string) {
      super(code, message);
      this.name = name;
    }
  };
}

/** A required header is absent or empty. */
export class MissingHeaderError extends errorOfCode('missing_header', 'MissingHeaderError') {}

/** A header is present but cannot be parsed (bad timestamp, no v1=, ...). */
export class MalformedHeaderError extends errorOfCode('malformed_header', 'MalformedHeaderError') {}

/** No signature in the header matches the one computed with the secret. */
export class NoMatchingSignatureError extends errorOfCode('no_matching_signature', 'NoMatchingSignatureError') {}

/** The signed timestamp is more than the tolerance in the past. */
export class TimestampTooOldError extends errorOfCode('timestamp_too_old', 'TimestampTooOldError') {}

/** The signed timestamp is more than the tolerance in the future. */
export class TimestampTooNewError extends errorOfCode('timestamp_too_new', 'TimestampTooNewError') {}

/** The signature is valid but the body is not UTF-8 JSON with an object at the top. */
export class InvalidBodyError extends errorOfCode('invalid_body', 'InvalidBodyError') {}
