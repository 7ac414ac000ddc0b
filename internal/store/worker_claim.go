package store

import (
	"context"

	"github.com/dlqops/dlq/internal/fingerprint"
	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// ParkClaimed parks claimed scheduled records that cannot be produced (the original topic
// is gone, the record is too large, ...) with reason, and returns how many it parked.
func (s *Records) ParkClaimed(ctx context.Context, token string, ids []int64, reason Reason, errMsg string) (int, error) {
	errMsg = cleanText(errMsg)
	n, err := queries.ParkClaimed(ctx, s.pool, dbsqlc.ParkClaimedParams{Reason: string(reason), ErrorMessage: errMsg,
		MessageTemplate: fingerprint.Template(errMsg), FingerprintHexDigits: 2 * fingerprint.Bytes,
		Now: s.now(), Token: token, Ids: ids})
	return int(n), interpretError(err)
}
