-- slow_since: when the endpoint's attempts started taking SlowAfter (2 s)
-- or longer (a timeout included); NULL while they answer faster. The
-- deliver worker runs a slow endpoint's deliveries in the slow lane (River
-- queue deliver_slow), so they never hold the workers of the healthy ones.
ALTER TABLE hookd_endpoints ADD COLUMN slow_since BIGINT;
