package store

import (
	"context"

	"github.com/dlqops/dlq/internal/fingerprint"
	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// MaxRecordID is the highest record id so far: where a fingerprint backfill ends, since
// every record stored from now on gets its fingerprint when it is stored.
func (s *Housekeeping) MaxRecordID(ctx context.Context) (int64, error) {
	id, err := queries.MaxRecordID(ctx, s.pool)
	return id, interpretError(err)
}

// BackfillFingerprints gives the records with ids in (after, until] that were stored
// before fingerprints existed their message template and fingerprint, computed as when a
// record is stored (insertRow), so that incidents count them with the newer records of
// their cause. It returns how many it filled; running it twice is harmless.
func (s *Housekeeping) BackfillFingerprints(ctx context.Context, after, until int64) (int64, error) {
	rows, err := queries.UnfingerprintedRecords(ctx, s.pool, dbsqlc.UnfingerprintedRecordsParams{After: after, Until: until})
	if err != nil || len(rows) == 0 {
		return 0, interpretError(err)
	}
	p := dbsqlc.SetFingerprintsParams{Ids: make([]int64, len(rows)), MessageTemplates: make([]string, len(rows)),
		Fingerprints: make([]string, len(rows))}
	for i, r := range rows {
		template := fingerprint.Template(r.ErrorMessage)
		p.Ids[i], p.MessageTemplates[i], p.Fingerprints[i] = r.ID, template, fingerprint.Of(r.ErrorClass, template, r.OriginalTopic)
	}
	n, err := queries.SetFingerprints(ctx, s.pool, p)
	return n, interpretError(err)
}
