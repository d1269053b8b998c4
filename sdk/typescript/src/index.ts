import { createJwksVerifier } from './jwks.js';
import { signKwork, verifyKwork, verifyKworkSignature } from './kwork.js';
import { signStandard, verifyStandard, verifyStandardSignature } from './standard.js';

export {
  WEBHOOK_ERROR_CODES,
  InvalidBodyError,
  MalformedHeaderError,
  MissingHeaderError,
  NoMatchingSignatureError,
  TimestampTooNewError,
  TimestampTooOldError,
  WebhookVerificationError,
  type WebhookErrorCode,
} from './errors.js';
export type { RawBody } from './body.js';
export {
  DELIVERY_CONTROL_HEADER,
  answerAbortMessage,
  answerDisable,
  type DeliveryControl,
  type SettableHeaders,
} from './control.js';
export type { Clock } from './time.js';
export { createJwksVerifier, jwksPublicKeys, type JwksVerifier, type JwksVerifierOptions } from './jwks.js';
export type { HeaderValue, HeadersLike, WebhookHeaders } from './headers.js';
export {
  KWORK_SIGNATURE_HEADER,
  parseKworkSignatureHeader,
  signKwork,
  verifyKwork,
  verifyKworkSignature,
  type KworkEvent,
  type KworkSignatureHeader,
  type KworkVerifiedMessage,
  type KworkVerifyOptions,
} from './kwork.js';
export { messageHeaders, verifyMessage, type MessageHeaders } from './message.js';
export {
  signStandard,
  verifyStandard,
  verifyStandardSignature,
  type StandardEvent,
  type StandardKeys,
  type StandardVerifiedMessage,
  type StandardVerifyOptions,
} from './standard.js';

/**
 * The verifier as documented: `webhooks.verify` (kwork scheme) and
 * `webhooks.verifyStandard` (Standard Webhooks), plus the signing helpers.
 */
export const webhooks = Object.freeze({
  verify: verifyKwork,
  verifySignature: verifyKworkSignature,
  verifyStandard,
  verifyStandardSignature,
  createJwksVerifier,
  signKwork,
  signStandard,
});
