-- Destinations beyond HTTP (issue 44): an endpoint whose url names a broker
-- with a password keeps that url, password and all, sealed here (like its
-- signing secret); hookd_endpoints.url holds it with the password shown
-- as ***. Deleted with the endpoint.
CREATE TABLE IF NOT EXISTS hookd_endpoint_credentials (
    endpoint_id TEXT PRIMARY KEY REFERENCES hookd_endpoints (id) ON DELETE CASCADE,
    url_sealed  BYTEA NOT NULL
);
