-- developer: the kwork app's developer subscription, the one its
-- lifecycle events (app.*) go to (kwork: "sent automatically to the app's
-- dedicated developer subscription"). Before this every subscription of
-- the app got them; so that an app keeps getting them after the upgrade,
-- each kwork owner's oldest subscription becomes its developer one.
ALTER TABLE hookd_endpoints ADD COLUMN developer BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE hookd_endpoints SET developer = TRUE WHERE id IN (
    SELECT MIN(e.id) FROM hookd_endpoints e JOIN hookd_owners o ON o.id = e.owner_id
    WHERE o.profile = 'kwork' GROUP BY e.owner_id);
