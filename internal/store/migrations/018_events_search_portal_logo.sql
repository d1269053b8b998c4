-- events.list reads one owner's events newest first, in a time window,
-- a page at a time: (owner_id, created_at, id) serves the owner, the
-- window and the cursor from one index on both engines; the type glob
-- and subject prefix filter the rows it reads.
CREATE INDEX IF NOT EXISTS hookd_events_owner_created ON hookd_events (owner_id, created_at, id);

-- An owner's portal logo, uploaded (at most 64 KiB, its type sniffed when
-- it was put: PNG, JPEG or WebP) and served by hookd from here.
CREATE TABLE IF NOT EXISTS hookd_portal_logos (
    owner_id     TEXT PRIMARY KEY REFERENCES hookd_owners (id) ON DELETE CASCADE,
    content_type TEXT NOT NULL,
    data         BYTEA NOT NULL,
    updated_at   BIGINT NOT NULL
);
