-- The topic id each source topic of share groups' dead letters had when a worker last
-- resolved a dead letter in it, shared by every worker and kept across restarts: a topic
-- deleted and re-created under the same name gets a new id, and a dead letter written
-- before the first sighting of the new id may name a record of the old topic.

-- +goose Up
CREATE TABLE source_topic_ids (
    topic       text        PRIMARY KEY,
    topic_id    text        NOT NULL,
    -- when a worker first saw topic_id: the topic existed under it no earlier
    seen_since  timestamptz NOT NULL,
    -- the id seen before topic_id (NULL: none): the topic was re-created
    replaced_id text
);

-- +goose Down
DROP TABLE source_topic_ids;
