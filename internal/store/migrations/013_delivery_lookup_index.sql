-- postgres only
-- A deliver job finds its delivery by (endpoint_id, event_id), and a
-- fanout asks which of an owner's endpoints already have the event, both
-- served by the unique (endpoint_id, event_id). A connection plans each
-- statement once for all (a generic plan, after five runs), and on a table
-- that autovacuum has not analyzed yet (a new database's first minute)
-- every index that begins with endpoint_id costs the same. PostgreSQL then
-- takes the newest of them: hookd_deliveries_endpoint_recent (007), which
-- matches only endpoint_id, so each lookup read all of the endpoint's
-- deliveries until the next ANALYZE replanned it. Rebuilding the unique
-- index makes it the newest, and it wins the tie; TestDeliveryLookupPlans
-- fails when a later index leading with endpoint_id takes it back.
ALTER TABLE hookd_deliveries
    DROP CONSTRAINT hookd_deliveries_endpoint_id_event_id_key,
    ADD CONSTRAINT hookd_deliveries_endpoint_id_event_id_key UNIQUE (endpoint_id, event_id);
