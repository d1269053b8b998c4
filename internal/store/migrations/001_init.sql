-- hookd's own tables. One DDL for SQLite and PostgreSQL: times are BIGINT
-- unix microseconds (so every comparison is an integer one on both engines
-- and the clock is always hookd's, never the database's), JSON is TEXT.
CREATE TABLE IF NOT EXISTS hookd_owners (
    id          TEXT PRIMARY KEY,
    profile     TEXT NOT NULL,
    attributes  TEXT NOT NULL DEFAULT '{}',
    created_at  BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS hookd_api_keys (
    id          TEXT PRIMARY KEY,
    owner_id    TEXT REFERENCES hookd_owners (id) ON DELETE CASCADE,
    role        TEXT NOT NULL,
    hash        BYTEA NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);

-- owner_id '' is the catalog shared by every owner.
CREATE TABLE IF NOT EXISTS hookd_event_types (
    owner_id    TEXT NOT NULL,
    name        TEXT NOT NULL,
    exposure    TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (owner_id, name)
);

CREATE TABLE IF NOT EXISTS hookd_events (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES hookd_owners (id) ON DELETE CASCADE,
    type            TEXT NOT NULL,
    subject         TEXT NOT NULL DEFAULT '',
    occurred_at     BIGINT NOT NULL,
    data            BYTEA NOT NULL,
    tenant          TEXT NOT NULL DEFAULT '',
    endpoint_id     TEXT NOT NULL DEFAULT '',
    idempotency_key TEXT,
    created_at      BIGINT NOT NULL,
    UNIQUE (owner_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS hookd_events_created ON hookd_events (created_at);

CREATE TABLE IF NOT EXISTS hookd_endpoints (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES hookd_owners (id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    event_types     TEXT NOT NULL,
    secret_sealed   BYTEA NOT NULL,
    scope_source    TEXT NOT NULL DEFAULT '',
    enabled         BOOLEAN NOT NULL,
    disabled_reason TEXT NOT NULL DEFAULT '',
    failing_since   BIGINT,
    max_in_flight   INTEGER NOT NULL DEFAULT 1,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS hookd_endpoints_owner ON hookd_endpoints (owner_id, created_at);

-- One row per concurrent delivery an endpoint may have in flight: the
-- standard profile has one (the lease), kwork up to max_in_flight.
CREATE TABLE IF NOT EXISTS hookd_endpoint_leases (
    endpoint_id TEXT NOT NULL REFERENCES hookd_endpoints (id) ON DELETE CASCADE,
    slot        INTEGER NOT NULL,
    busy_until  BIGINT NOT NULL DEFAULT 0,
    holder      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (endpoint_id, slot)
);

-- Deliveries outlive River's job rows (River deletes finished jobs after a
-- day or a week); no foreign key to events, so a delivery whose event was
-- pruned can still be found and discarded with that reason.
CREATE TABLE IF NOT EXISTS hookd_deliveries (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES hookd_owners (id) ON DELETE CASCADE,
    endpoint_id     TEXT NOT NULL REFERENCES hookd_endpoints (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    job_id          BIGINT NOT NULL DEFAULT 0,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    next_attempt_at BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    finished_at     BIGINT,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX IF NOT EXISTS hookd_deliveries_endpoint ON hookd_deliveries (endpoint_id, created_at);
CREATE INDEX IF NOT EXISTS hookd_deliveries_finished ON hookd_deliveries (finished_at);
