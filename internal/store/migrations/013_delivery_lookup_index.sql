-- postgres only
-- A deliver job finds its delivery by (endpoint_id, event_id), and a
-- fanout asks which of an owner's endpoints already have the event: the
-- unique (endpoint_id, event_id) serves both. A connection plans each
-- statement once for all (a generic plan, after five runs), and while
-- autovacuum has not analyzed the table (a new database's first minute,
-- every benchmark's fresh schema) PostgreSQL has no idea how many rows an
-- endpoint has. Any index that begins with endpoint_id then looked as good
-- for those lookups, and PostgreSQL took hookd_deliveries_endpoint_recent
-- (007): it matched only endpoint_id, so each lookup read all of the
-- endpoint's deliveries until an ANALYZE replanned it.
-- The endpoint_recent index is now partial on created_at IS NOT NULL. Every
-- row has a created_at, so it holds what it held; but PostgreSQL uses a
-- partial index only for a query whose conditions imply its predicate,
-- and the console's reads of it (created_at >= $2) do, while the lookups,
-- with no condition on created_at, cannot use it at all. Rebuilding the
-- unique index after it makes that the table's newest index, which
-- PostgreSQL prefers when it weighs two indexes the same (the other is
-- (endpoint_id, id)). TestDeliveryLookupPlans checks the plans.
DROP INDEX IF EXISTS hookd_deliveries_endpoint_recent;
CREATE INDEX hookd_deliveries_endpoint_recent ON hookd_deliveries (endpoint_id, created_at, state, attempts) WHERE created_at IS NOT NULL;
ALTER TABLE hookd_deliveries
    DROP CONSTRAINT hookd_deliveries_endpoint_id_event_id_key,
    ADD CONSTRAINT hookd_deliveries_endpoint_id_event_id_key UNIQUE (endpoint_id, event_id);
