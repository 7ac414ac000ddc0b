package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// DiscardRecord discards a parked or scheduled record that no active job holds, writing
// the operator's reason in the audit row. It returns ErrNotFound or ErrConflict (with the
// audit row of the refusal).
func (s *Records) DiscardRecord(ctx context.Context, id int64, reason string, actor Actor) (Record, error) {
	var rec Record
	var outcome error
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockReservable(ctx, tx, []int64{id}, now); err != nil {
			if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) {
				return err
			}
			outcome = err
		} else {
			row, err := queries.Discard(ctx, tx, dbsqlc.DiscardParams{Now: now, Actor: actor.Name, ID: id})
			if err != nil {
				return err
			}
			rec = recordFromRow(dbsqlc.GetRecordRow(row))
		}
		affected := int64(1)
		if outcome != nil {
			affected = 0
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: "discard", RecordIDs: []int64{id}, Affected: affected, Outcome: outcomeOf(outcome), Reason: reason})
	})
	if err != nil {
		return Record{}, err
	}
	if outcome != nil {
		return Record{}, fmt.Errorf("discard record %d: %w", id, &refusal{outcome})
	}
	return rec, nil
}
