-- The lease hand-over looks up an endpoint's next waiting delivery; only
-- pending rows are indexed, so the index stays small however long the log.
CREATE INDEX IF NOT EXISTS hookd_deliveries_pending ON hookd_deliveries (endpoint_id, id) WHERE state = 'pending';
