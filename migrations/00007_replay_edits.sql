-- Replay with edits: an operator's replacement value and/or headers for a single replay,
-- kept on its job. The record's row keeps what was dead-lettered; the job says what was
-- sent instead. NULL: nothing edited.

-- +goose Up
ALTER TABLE jobs ADD COLUMN edit jsonb;

-- +goose Down
ALTER TABLE jobs DROP COLUMN edit;
