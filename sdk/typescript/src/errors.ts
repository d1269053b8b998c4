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

/** A required header is absent or empty. */
export class MissingHeaderError extends WebhookVerificationError {
  static readonly errorCode = 'missing_header';
  declare readonly code: 'missing_header';
  constructor(message: string) {
    super('missing_header', message);
    this.name = 'MissingHeaderError';
  }
}

/** A header is present but cannot be parsed (bad timestamp, no v1=, ...). */
export class MalformedHeaderError extends WebhookVerificationError {
  static readonly errorCode = 'malformed_header';
  declare readonly code: 'malformed_header';
  constructor(message: string) {
    super('malformed_header', message);
    this.name = 'MalformedHeaderError';
  }
}

/** No signature in the header matches the one computed with the secret. */
export class NoMatchingSignatureError extends WebhookVerificationError {
  static readonly errorCode = 'no_matching_signature';
  declare readonly code: 'no_matching_signature';
  constructor(message: string) {
    super('no_matching_signature', message);
    this.name = 'NoMatchingSignatureError';
  }
}

/** The signed timestamp is more than the tolerance in the past. */
export class TimestampTooOldError extends WebhookVerificationError {
  static readonly errorCode = 'timestamp_too_old';
  declare readonly code: 'timestamp_too_old';
  constructor(message: string) {
    super('timestamp_too_old', message);
    this.name = 'TimestampTooOldError';
  }
}

/** The signed timestamp is more than the tolerance in the future. */
export class TimestampTooNewError extends WebhookVerificationError {
  static readonly errorCode = 'timestamp_too_new';
  declare readonly code: 'timestamp_too_new';
  constructor(message: string) {
    super('timestamp_too_new', message);
    this.name = 'TimestampTooNewError';
  }
}

/** The signature is valid but the body is not UTF-8 JSON with an object at the top. */
export class InvalidBodyError extends WebhookVerificationError {
  static readonly errorCode = 'invalid_body';
  declare readonly code: 'invalid_body';
  constructor(message: string) {
    super('invalid_body', message);
    this.name = 'InvalidBodyError';
  }
}
