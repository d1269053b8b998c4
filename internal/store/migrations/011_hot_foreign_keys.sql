-- postgres only
-- The foreign keys of the two tables every publish and every delivery
-- write. On PostgreSQL each row written ran a referential check: a query
-- of the parent row and a FOR KEY SHARE lock on it, and concurrent fanouts
-- of one owner's events all locked the same owner and endpoint rows. The
-- checks took ~8 of the ~18 µs PostgreSQL spent inserting an event, and
-- dropping them cut PostgreSQL's CPU while delivering by a fifth
-- (docs/performance-history.md). What they did is now hookd's own:
-- deleting an owner or an endpoint deletes its events and deliveries in
-- the same transaction (store.DeleteOwner, store.DeleteEndpoint); a
-- publish locks its owner's row while it writes (store.ReadPublishRules),
-- so an owner's delete waits for it and then deletes its events; and a
-- delivery a fanout wrote for an endpoint deleted meanwhile is dropped by
-- its own job (store.DropOrphanDelivery). SQLite keeps them: its checks
-- are index lookups, with no row locks.
ALTER TABLE hookd_events DROP CONSTRAINT IF EXISTS hookd_events_owner_id_fkey;
ALTER TABLE hookd_deliveries DROP CONSTRAINT IF EXISTS hookd_deliveries_owner_id_fkey;
ALTER TABLE hookd_deliveries DROP CONSTRAINT IF EXISTS hookd_deliveries_endpoint_id_fkey;
