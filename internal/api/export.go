package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// exportPageSize is how many whole records (payloads included) an export holds at once:
// its memory is a page, whatever the selection's size.
const exportPageSize = 20

// exportAuditTimeout bounds writing an export's audit row after its client went away.
const exportAuditTimeout = 10 * time.Second

// exportRecords is the handler that streams the records a listing's filters select,
// within the token's topics, as JSON lines, each line what GET /v1/records/{id} answers for
// the record (toDetail and the decoded key and value, masked as there), oldest first. The selection ends at the request's time, as a bulk
// job's does, so that records parked meanwhile do not stretch it. The export is audited
// with its filter and how many records it wrote.
func exportRecords(s *Server) handler {
	return func(c *call) (int, any, error) {
		now := s.cfg.Clock()
		q, err := query(c.r, filterParams...)
		if err != nil {
			return 0, nil, err
		}
		f, err := filterFromQuery(q, now)
		if err != nil {
			return 0, nil, err
		}
		if err := s.masks.contentSearch(c, &f); err != nil {
			return 0, nil, err
		}
		if err := knownRoute(c, s.cfg.Store, "route", f.Route); err != nil {
			return 0, nil, err
		}
		f.OriginalTopics = c.principal.Topics
		if f.StoredTo.IsZero() || f.StoredTo.After(now) {
			f.StoredTo = now
		}
		// The first page is read before the answer starts, so that a failing database is a
		// problem answer rather than an empty export.
		first, err := s.cfg.Store.ListAfter(c.r.Context(), f, 0, exportPageSize)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, &export{s: s, c: c, f: f, page: first}, nil
	}
}

// export is the streamed body of an export: serve writes it instead of a JSON value.
type export struct {
	s    *Server
	c    *call
	f    store.Filter
	page []store.Record
}

// stream writes every selected record, page by page, and audits the export with how many
// records it wrote and whether it ended early.
func (e *export) stream(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	ctx := e.c.r.Context()
	enc := json.NewEncoder(w)
	var written int64
	var err error
	for len(e.page) > 0 && err == nil {
		for i := range e.page {
			d := toDetail(&e.page[i], e.s.cfg.Masking)
			e.s.payloads.withDecoded(&d, &e.page[i], e.s.cfg.Masking)
			if err = enc.Encode(d); err != nil {
				break
			}
			written++
		}
		if err != nil || len(e.page) < exportPageSize {
			break
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		e.page, err = e.s.cfg.Store.ListAfter(ctx, e.f, e.page[len(e.page)-1].ID, exportPageSize)
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	auditCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exportAuditTimeout)
	defer cancel()
	f := e.f
	if aerr := e.s.cfg.Store.Audit(auditCtx, store.AuditEntry{At: e.s.cfg.Clock().UTC(), Actor: e.c.actor.Name,
		Action: "export_records", Filter: &f, Affected: written, Outcome: outcome, RequestID: e.c.actor.RequestID,
		ClientRequestID: e.c.actor.ClientRequestID}); aerr != nil {
		e.c.log.Error().Err(aerr).Int64("records", written).Msg("export: the audit row was not written")
	}
	if err != nil {
		e.c.log.Error().Err(err).Int64("records", written).Msg("export: aborted after some records were sent")
	}
	return err
}
