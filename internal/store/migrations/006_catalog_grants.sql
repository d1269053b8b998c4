-- Event types: scoped (seed 000: only corpus.note.changed is judged for
-- scope) and, for shared types, the profile whose owners are offered them
-- ('' = every owner; a profile's test and lifecycle types name it).
ALTER TABLE hookd_event_types ADD COLUMN scoped BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE hookd_event_types ADD COLUMN profile TEXT NOT NULL DEFAULT '';

-- Grants: seed 000's embed access code as an owner's resource. An endpoint
-- names one in hookd_endpoints.scope_source (the API's grant_id); allow and
-- deny are JSON arrays of subject globs.
CREATE TABLE IF NOT EXISTS hookd_grants (
    id             TEXT PRIMARY KEY,
    owner_id       TEXT NOT NULL REFERENCES hookd_owners (id) ON DELETE CASCADE,
    description    TEXT NOT NULL DEFAULT '',
    allow          TEXT NOT NULL,
    deny           TEXT NOT NULL,
    published_only BOOLEAN NOT NULL DEFAULT FALSE,
    expires_at     BIGINT,
    revoked_at     BIGINT,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS hookd_grants_owner ON hookd_grants (owner_id, created_at);
