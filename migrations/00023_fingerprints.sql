-- The cause of each stored record, so that 11,000 parked records read as the few causes
-- they are: the error message with its variable parts replaced (message_template) and the
-- hash of error class, template and original topic (fingerprint), both set when a record
-- is parked or scheduled (internal/fingerprint). Records stored before this migration have
-- NULL in both: the normaliser lives in Go, and a SQL copy of it would split their
-- incidents from the new records'. They stay listed as records, not as incidents.

-- +goose Up
ALTER TABLE dead_letters ADD COLUMN fingerprint text, ADD COLUMN message_template text;
-- One incident's records, for its counts and for a bulk job that acts on it.
CREATE INDEX dead_letters_fingerprint_idx ON dead_letters (fingerprint, status, id)
    WHERE fingerprint IS NOT NULL;

-- +goose Down
DROP INDEX dead_letters_fingerprint_idx;
ALTER TABLE dead_letters DROP COLUMN fingerprint, DROP COLUMN message_template;
