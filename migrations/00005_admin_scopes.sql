-- Admin API hardening: the original topics a job or an audit row concerns, so that a token
-- limited to some topics sees only those jobs and audit rows (NULL: any topic, which only
-- an unscoped token sees), and the client's own X-Request-Id beside the one the server
-- generated.

-- +goose Up
ALTER TABLE jobs ADD COLUMN topics text[];
ALTER TABLE audit_log ADD COLUMN topics text[];
ALTER TABLE audit_log ADD COLUMN client_request_id text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE audit_log DROP COLUMN client_request_id;
ALTER TABLE audit_log DROP COLUMN topics;
ALTER TABLE jobs DROP COLUMN topics;
