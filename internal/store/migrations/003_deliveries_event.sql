-- Fanout asks which endpoints already have a delivery of an event.
CREATE INDEX IF NOT EXISTS hookd_deliveries_event ON hookd_deliveries (event_id);
