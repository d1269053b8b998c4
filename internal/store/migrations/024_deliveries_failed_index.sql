-- The log filtered to failed deliveries (the console's "failed" filter,
-- webhooks.deliveries?state=failed): newest first from this index, which
-- holds only the failed (few), instead of a walk back through the
-- endpoint's whole log for them. At 200,000 deliveries a first page took
-- 26 ms (p50) on SQLite; it grows with the log. pending has its index
-- since 002.
CREATE INDEX IF NOT EXISTS hookd_deliveries_failed ON hookd_deliveries (endpoint_id, id) WHERE state = 'failed';
