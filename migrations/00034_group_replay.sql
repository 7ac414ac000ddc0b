-- A replay job can send each record where a redrive of its route would, by the consumer
-- group that failed it: '' (or source) to the original or named topic, group_topic to
-- the group's own topic, group_header to the topic addressed to the group.

-- +goose Up
ALTER TABLE jobs ADD COLUMN redrive_to text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE jobs DROP COLUMN redrive_to;
