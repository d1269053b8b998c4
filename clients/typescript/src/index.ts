export { HookdClient } from './client.js';
export type { ClientOptions, RetryOptions } from './client.js';
export { HookdError } from './errors.js';
export type { ErrorCode } from './errors.js';
export type { CallOptions, OpSpec } from './spec.js';
export * from './ops.js';
