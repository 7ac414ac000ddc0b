package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// $1 token, $2 lease until, $3 now, $4 limit, $5 route: sqlClaimDue for one route.
const sqlClaimDueRoute = `WITH due AS (
		SELECT id AS due_id FROM dead_letters
		WHERE status = 'scheduled' AND route = $5 AND due_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
		ORDER BY due_at, id
		LIMIT $4
		FOR UPDATE SKIP LOCKED)
	UPDATE dead_letters SET lease_owner = $1, lease_until = $2
	FROM due WHERE id = due_id
	RETURNING ` + recordColumns

// $1 token, $2 now, $3 ids, $4 reason, $5 error message.
const sqlParkClaimed = `UPDATE dead_letters SET status = 'parked', reason = $4, error_message = $5,
		due_at = NULL, lease_owner = NULL, lease_until = NULL, changed_at = $2, changed_by = $1
	WHERE id = ANY($3) AND status = 'scheduled' AND lease_owner = $1`

// ClaimDueRoute is ClaimDue restricted to the scheduled records of one route, so that a
// worker only redrives records whose route (allow-list, header policy) it knows. Records
// come in due order.
func (s *Store) ClaimDueRoute(ctx context.Context, route, owner string, limit int, lease time.Duration) (Claim, error) {
	if limit <= 0 || lease <= 0 {
		return Claim{}, &ValidationError{Field: "claim", Reason: "limit and lease must be positive"}
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	claim := Claim{Token: owner + "/" + hex.EncodeToString(b[:])}
	now := s.now()
	rows, err := s.pool.Query(ctx, sqlClaimDueRoute, claim.Token, now.Add(lease), now, limit, route)
	if err != nil {
		return Claim{}, interpretError(err)
	}
	claim.Records, err = collect(rows, scanRecord)
	return claim, err
}

// ParkClaimed parks claimed scheduled records that cannot be produced (the original topic
// is gone, the record is too large, ...) with reason, and returns how many it parked.
func (s *Store) ParkClaimed(ctx context.Context, token string, ids []int64, reason Reason, errMsg string) (int, error) {
	tag, err := s.pool.Exec(ctx, sqlParkClaimed, token, s.now(), ids, string(reason), cleanText(errMsg))
	return int(tag.RowsAffected()), interpretError(err)
}
