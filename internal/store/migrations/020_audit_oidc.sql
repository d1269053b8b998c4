-- The audit log: one row per state-changing op, written in the op's own
-- transaction. owner_id has no foreign key on purpose: the record of an
-- owner's deletion outlives the owner. changes is a JSON array of
-- {field, old, new} with every secret already redacted. Ids are ULIDs
-- (aud_…), so id order is time order: the pages walk (owner_id, id) and
-- retention deletes by at.
CREATE TABLE IF NOT EXISTS hookd_audit (
    id           TEXT PRIMARY KEY,
    at           BIGINT NOT NULL,
    owner_id     TEXT NOT NULL DEFAULT '',
    actor_kind   TEXT NOT NULL,
    actor_id     TEXT NOT NULL DEFAULT '',
    actor_name   TEXT NOT NULL DEFAULT '',
    remote       TEXT NOT NULL DEFAULT '',
    op           TEXT NOT NULL,
    resource     TEXT NOT NULL,
    resource_id  TEXT NOT NULL DEFAULT '',
    changes      TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS hookd_audit_owner ON hookd_audit (owner_id, id);
CREATE INDEX IF NOT EXISTS hookd_audit_at ON hookd_audit (at);
-- A console session signed in through the identity provider (OIDC): no API
-- key behind it, so it has a table of its own beside
-- hookd_console_sessions. subject and name are the provider's; role and
-- key_owner come from the claim-to-role mapping at sign-in.
CREATE TABLE IF NOT EXISTS hookd_console_user_sessions (
    hash        BYTEA PRIMARY KEY,
    subject     TEXT NOT NULL,
    name        TEXT NOT NULL DEFAULT '',
    role        TEXT NOT NULL,
    key_owner   TEXT NOT NULL DEFAULT '',
    owner_id    TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS hookd_console_user_sessions_expires ON hookd_console_user_sessions (expires_at);
