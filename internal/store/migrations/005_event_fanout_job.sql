-- An event waiting for its fanout carries its webhook.fanout job's id (0
-- once fanned out, and for events from before this column). A fanout job
-- fans out other waiting events of the same owner in its transaction and
-- deletes their jobs: one transaction and one endpoint list for many events.
ALTER TABLE hookd_events ADD COLUMN fanout_job BIGINT NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS hookd_events_awaiting_fanout ON hookd_events (owner_id, id) WHERE fanout_job <> 0;
