-- Jobs count the selected records they neither replayed/discarded nor failed: taken by
-- another job or changed meanwhile, so that total = done + failed + skipped.

-- +goose Up
ALTER TABLE jobs ADD COLUMN skipped bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN skipped;
