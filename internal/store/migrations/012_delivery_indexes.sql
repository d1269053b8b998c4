-- Two of the delivery log's indexes that every delivery wrote for little.
-- The index by event alone served one read, the fanout's of which
-- endpoints already have a delivery of its event; that read now names the
-- owner's endpoints, and the unique (endpoint_id, event_id) serves it. A
-- delivery wrote it twice (at insert and at settle, which is never a HOT
-- update).
DROP INDEX IF EXISTS hookd_deliveries_event;
-- Pruning reads finished deliveries only (finished_at < cutoff); every
-- delivery is unfinished when it is written, and needs no entry then.
CREATE INDEX IF NOT EXISTS hookd_deliveries_finished_at ON hookd_deliveries (finished_at) WHERE finished_at IS NOT NULL;
DROP INDEX IF EXISTS hookd_deliveries_finished;
