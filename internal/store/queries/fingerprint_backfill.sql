-- name: MaxRecordID :one
SELECT coalesce(max(id), 0)::bigint FROM dead_letters;

-- name: UnfingerprintedRecords :many
-- UnfingerprintedRecords walks one id range on the primary key: records stored before
-- fingerprints existed.
SELECT id, error_class, error_message, coalesce(original_topic, '')::text AS original_topic FROM dead_letters
	WHERE id > @after AND id <= @until AND fingerprint IS NULL
	ORDER BY id;

-- name: SetFingerprints :execrows
UPDATE dead_letters d SET message_template = v.message_template, fingerprint = v.fingerprint
	FROM ROWS FROM (unnest(@ids::bigint[]), unnest(@message_templates::text[]), unnest(@fingerprints::text[]))
		AS v(id, message_template, fingerprint)
	WHERE d.id = v.id AND d.fingerprint IS NULL;
