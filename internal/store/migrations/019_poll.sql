-- Polling endpoints (issue 43). kind 'http' pushes to url; kind 'poll' has
-- no url: its consumer reads its messages with the endpoint's poll token.
ALTER TABLE hookd_endpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'http';
-- One row per polling endpoint: the SHA-256 of its poll token (shown once),
-- the last sequence number given to one of its messages (taken with one
-- UPDATE … RETURNING in the fanout's transaction, so its row lock orders
-- the commits and a cursor never skips a message committed late), and the
-- server-side cursor (ack, seek).
CREATE TABLE IF NOT EXISTS hookd_poll_endpoints (
    endpoint_id TEXT PRIMARY KEY REFERENCES hookd_endpoints (id) ON DELETE CASCADE,
    token_hash  BYTEA NOT NULL UNIQUE,
    last_seq    BIGINT NOT NULL DEFAULT 0,
    acked_seq   BIGINT NOT NULL DEFAULT 0
);
-- A polling endpoint's messages: the fanout writes one row per event
-- instead of a delivery and its River job. A poll of N messages is one
-- range read of the primary key. id is the message's delivery id (the
-- webhook-id a receiver dedupes on). Pruned with the deliveries' retention.
-- One message per event and endpoint: a fanout run again writes none.
CREATE TABLE IF NOT EXISTS hookd_poll_messages (
    endpoint_id TEXT NOT NULL REFERENCES hookd_endpoints (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    id          TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (endpoint_id, seq)
);
CREATE INDEX IF NOT EXISTS hookd_poll_messages_created ON hookd_poll_messages (created_at);
CREATE UNIQUE INDEX IF NOT EXISTS hookd_poll_messages_event ON hookd_poll_messages (endpoint_id, event_id);
