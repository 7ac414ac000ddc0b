-- name: InsertAudit :exec
-- InsertAudit: the row's topics are its job's, else those of its records (of_records; ''
-- for a record without an original topic), else NULL (any topic: routes, refusals before
-- a record was found). record_ids is what the row keeps (storedIDs).
INSERT INTO audit_log (at, actor, action, record_ids, filter, job_id, route,
		affected, outcome, request_id, reason, client_request_id, record_ranges, edit, topics)
	VALUES (@at, @actor, @action, @record_ids, @filter, @job_id, @route, @affected, @outcome, @request_id, @reason,
		@client_request_id, @record_ranges, @edit, CASE
		WHEN @job_id::bigint IS NOT NULL THEN (SELECT topics FROM jobs WHERE id = @job_id)
		WHEN cardinality(@of_records::bigint[]) > 0 THEN (SELECT array_agg(DISTINCT coalesce(original_topic, ''))
			FROM dead_letters WHERE id = ANY(@of_records))
		END);
