-- postgres only
-- Idempotency keys in a table of their own (issue 48). hookd_events is
-- partitioned by time on PostgreSQL (partition.go), and a unique key of a
-- partitioned table must include its partition key: UNIQUE (owner_id,
-- idempotency_key) could then hold only within one partition, and a
-- publish repeated across a partition's boundary would make a second
-- event. A publish with a key now inserts (owner, key) here first, and
-- its event only if that insert did (event.go); retention deletes keys
-- with their events' window. The keys already in hookd_events are copied,
-- so a producer resending an earlier publish still gets the earlier event.
CREATE TABLE IF NOT EXISTS hookd_event_keys (
    owner_id        TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (owner_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS hookd_event_keys_created ON hookd_event_keys (created_at);
INSERT INTO hookd_event_keys (owner_id, idempotency_key, event_id, created_at)
    SELECT owner_id, idempotency_key, id, created_at FROM hookd_events WHERE idempotency_key IS NOT NULL
    ON CONFLICT DO NOTHING;
