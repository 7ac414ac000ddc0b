-- Masked payload fields stay searchable by exact match: the admin API compares the keyed
-- hash of a caller's value with that of each record's field, computed in the query from
-- the HMAC's two padded keys (internal/masking), so no extension is needed and the key is
-- never stored. dlq_json_member reads one member of a value as text, NULL when the value
-- is not JSON.
--
-- A replay with edits keeps what it sent on its audit row (edit), so a record's history
-- shows the edit after its job and the job's own row are gone.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION dlq_json_member(value bytea, path text[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN convert_from(value, 'UTF8')::jsonb #>> path;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
-- +goose StatementEnd
ALTER TABLE audit_log ADD COLUMN edit jsonb;

-- +goose Down
ALTER TABLE audit_log DROP COLUMN edit;
DROP FUNCTION dlq_json_member(bytea, text[]);
