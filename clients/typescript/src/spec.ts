/** How the client calls one op: what the generated methods hand to the transport. */
export interface OpSpec {
  /** The operationId, e.g. "webhooks.create". */
  op: string;
  method: string;
  /** The path with {name} for the input's path parameters. */
  path: string;
  /** The input's fields sent as query parameters. */
  query: readonly string[];
  /** The input's fields sent as headers, by the header's name. */
  headers: { readonly [field: string]: string };
  /** Whether the input's other fields are a JSON body. */
  body: boolean;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call, and any wait before a retry. */
  signal?: AbortSignal;
}
