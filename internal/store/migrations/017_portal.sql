-- The tenant portal. A link is a one-time URL a producer's backend makes for
-- one of its owners: only SHA-256 of its token is stored, used_at marks it
-- spent (one UPDATE … WHERE used_at IS NULL takes it), and it carries what
-- the session it starts may do. features is a comma-separated list.
CREATE TABLE IF NOT EXISTS hookd_portal_links (
    hash        BYTEA PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES hookd_owners (id) ON DELETE CASCADE,
    features    TEXT NOT NULL,
    read_only   BOOLEAN NOT NULL DEFAULT FALSE,
    locale      TEXT NOT NULL DEFAULT '',
    return_url  TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    used_at     BIGINT
);
CREATE INDEX IF NOT EXISTS hookd_portal_links_expires ON hookd_portal_links (expires_at);
-- A portal session: what opening a link started, bound to the link's owner,
-- features and expiry. Its token is held by the page (never a cookie: see
-- docs/portal.md); only SHA-256 of it is stored.
CREATE TABLE IF NOT EXISTS hookd_portal_sessions (
    hash        BYTEA PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES hookd_owners (id) ON DELETE CASCADE,
    features    TEXT NOT NULL,
    read_only   BOOLEAN NOT NULL DEFAULT FALSE,
    locale      TEXT NOT NULL DEFAULT '',
    return_url  TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS hookd_portal_sessions_owner ON hookd_portal_sessions (owner_id);
CREATE INDEX IF NOT EXISTS hookd_portal_sessions_expires ON hookd_portal_sessions (expires_at);
