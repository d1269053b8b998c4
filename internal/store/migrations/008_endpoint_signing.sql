-- The public side of an endpoint's signing keys, shown in its record: the
-- scheme (hmac, ed25519, both), the whpk_ public key and the end of a
-- rotation's overlap, as JSON. The keys themselves stay in secret_sealed.
-- '' reads as hmac with no overlap: every endpoint from before this column.
ALTER TABLE hookd_endpoints ADD COLUMN signing TEXT NOT NULL DEFAULT '';
