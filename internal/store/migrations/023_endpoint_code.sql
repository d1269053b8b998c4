-- An endpoint's own code (issue 46): filter_code, a CEL expression asked at
-- fanout ('' lets every event through); transform_code, a JavaScript
-- handler(webhook) run before each attempt is signed ('' sends the
-- envelope as it is). Plain text: configuration, shown to its owner.
ALTER TABLE hookd_endpoints ADD COLUMN filter_code TEXT NOT NULL DEFAULT '';
ALTER TABLE hookd_endpoints ADD COLUMN transform_code TEXT NOT NULL DEFAULT '';
