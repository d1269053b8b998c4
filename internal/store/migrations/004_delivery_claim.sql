-- A delivery is claimed by whoever is about to send it (its own job, or a
-- lease holder draining the endpoint), so two senders never send it at once
-- even when an endpoint allows several deliveries in flight.
ALTER TABLE hookd_deliveries ADD COLUMN claimed_until BIGINT;
