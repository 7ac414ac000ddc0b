-- name: RouteControls :many
SELECT route, paused, run_requested_at, updated_by, updated_at, next_run_at, schedule,
	breaker_override, breaker_override_reason, breaker_state, breaker_since, breaker_returned_ratio, breaker_reported_by FROM route_controls ORDER BY route;

-- name: PauseRoute :one
-- PauseRoute updates only routes a worker registered: an unknown name is not found.
UPDATE route_controls SET paused = @paused, updated_by = @actor, updated_at = @now
	WHERE route = @route
	RETURNING route, paused, run_requested_at, updated_by, updated_at, next_run_at, schedule,
	breaker_override, breaker_override_reason, breaker_state, breaker_since, breaker_returned_ratio, breaker_reported_by;

-- name: RequestRun :one
UPDATE route_controls SET run_requested_at = @now::timestamptz, updated_by = @actor, updated_at = @now
	WHERE route = @route
	RETURNING route, paused, run_requested_at, updated_by, updated_at, next_run_at, schedule,
	breaker_override, breaker_override_reason, breaker_state, breaker_since, breaker_returned_ratio, breaker_reported_by;

-- name: AckRunRequest :exec
UPDATE route_controls SET run_requested_at = NULL
	WHERE route = @route AND run_requested_at = @requested_at::timestamptz;

-- name: RegisterRoutes :exec
-- RegisterRoutes keeps existing controls (a pause an operator set).
INSERT INTO route_controls (route, updated_by, updated_at)
	SELECT r, @updated_by::text, @now::timestamptz FROM unnest(@routes::text[]) AS r
	ON CONFLICT (route) DO NOTHING;

-- name: SetNextRun :exec
-- SetNextRun also writes the schedule the next run comes from.
UPDATE route_controls SET next_run_at = @next_run_at::timestamptz, schedule = @schedule::text WHERE route = @route;

-- name: PublishRouteTargets :exec
INSERT INTO route_controls (route, allowed_targets, updated_by, updated_at)
	VALUES (@route, @allowed_targets::text[], @updated_by, @now)
	ON CONFLICT (route) DO UPDATE SET allowed_targets = EXCLUDED.allowed_targets;

-- name: SetBreakerOverride :one
-- SetBreakerOverride forces a route's breaker open or closed, or (override NULL) gives it
-- back to the automatic breaker; only routes a worker registered.
UPDATE route_controls SET breaker_override = sqlc.narg(override)::text, breaker_override_reason = sqlc.narg(reason)::text,
	updated_by = @actor, updated_at = @now
	WHERE route = @route
	RETURNING route, paused, run_requested_at, updated_by, updated_at, next_run_at, schedule,
	breaker_override, breaker_override_reason, breaker_state, breaker_since, breaker_returned_ratio, breaker_reported_by;

-- name: ReportBreaker :exec
UPDATE route_controls SET breaker_state = @state::text, breaker_since = @since::timestamptz,
	breaker_returned_ratio = @returned_ratio::double precision, breaker_reported_by = @reported_by::text
	WHERE route = @route;

-- name: RegisteredRoutes :many
SELECT route FROM route_controls ORDER BY route;
