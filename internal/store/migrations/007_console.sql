-- The admin console's sessions: a browser signs in with an API key and gets
-- a random token in a cookie; only its SHA-256 is stored. owner_id is the
-- owner the session acts on (an operator switches it; an admin's is its
-- key's). A revoked or deleted key ends its sessions: every request joins
-- the key.
CREATE TABLE IF NOT EXISTS hookd_console_sessions (
    hash        BYTEA PRIMARY KEY,
    key_id      TEXT NOT NULL REFERENCES hookd_api_keys (id) ON DELETE CASCADE,
    owner_id    TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS hookd_console_sessions_expires ON hookd_console_sessions (expires_at);
-- The console's delivery log pages an endpoint's deliveries newest first by
-- id, filtered by state, type or time: (endpoint_id, id) serves the order.
CREATE INDEX IF NOT EXISTS hookd_deliveries_endpoint_id ON hookd_deliveries (endpoint_id, id);
-- The endpoint list's 24 h counts and the endpoint page's hourly chart
-- read state and attempts of an endpoint's recent deliveries: covering them
-- makes both index-only range scans. It replaces 001's
-- (endpoint_id, created_at), a prefix of it, so the table keeps its count
-- of indexes on that side.
CREATE INDEX IF NOT EXISTS hookd_deliveries_endpoint_recent ON hookd_deliveries (endpoint_id, created_at, state, attempts);
DROP INDEX IF EXISTS hookd_deliveries_endpoint;
