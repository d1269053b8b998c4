-- events.list reads one owner's events newest first, in a time window,
-- a page at a time: (owner_id, created_at, id) serves the owner, the
-- window and the cursor from one index on both engines; the type glob
-- and subject prefix filter the rows it reads.
CREATE INDEX IF NOT EXISTS hookd_events_owner_created ON hookd_events (owner_id, created_at, id);
