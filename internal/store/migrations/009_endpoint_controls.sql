-- Endpoint controls. headers: extra request headers sent on every attempt
-- (a JSON object, plain text: they are configuration, not secrets).
-- rate_limit: deliveries per second at most (0: no limit). ordered: the
-- endpoint gets its deliveries in publish order, one at a time.
ALTER TABLE hookd_endpoints ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';
ALTER TABLE hookd_endpoints ADD COLUMN rate_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hookd_endpoints ADD COLUMN ordered BOOLEAN NOT NULL DEFAULT FALSE;
-- A rate-limited endpoint's next free send time (unix microseconds), taken
-- with one upsert … RETURNING by whichever process sends next.
CREATE TABLE IF NOT EXISTS hookd_endpoint_rates (
    endpoint_id TEXT PRIMARY KEY REFERENCES hookd_endpoints (id) ON DELETE CASCADE,
    next_at     BIGINT NOT NULL DEFAULT 0
);
-- An ordered endpoint's head: its pending delivery of the oldest event.
CREATE INDEX IF NOT EXISTS hookd_deliveries_pending_event ON hookd_deliveries (endpoint_id, event_id) WHERE state = 'pending';
-- Event-type schemas: a JSON Schema for data ('' none), its hash (what a
-- process's compiled-schema cache is keyed by) and an example payload.
ALTER TABLE hookd_event_types ADD COLUMN data_schema TEXT NOT NULL DEFAULT '';
ALTER TABLE hookd_event_types ADD COLUMN schema_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE hookd_event_types ADD COLUMN example TEXT NOT NULL DEFAULT '';
