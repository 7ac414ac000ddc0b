package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

// maxReasonBytes bounds an operator's reason.
const maxReasonBytes = 1000

func (s *Server) listRecords(c *call) (int, any, error) {
	f, cursor, limit, err := listingQuery(c.r, s.cfg.Clock())
	if err != nil {
		return 0, nil, err
	}
	if err := knownRoute(c, s.cfg.Store, "route", f.Route); err != nil {
		return 0, nil, err
	}
	if f.Masked, err = s.masks.maskedMatch(c.r.URL.Query()); err != nil {
		return 0, nil, err
	}
	if err := s.masks.contentSearch(c, &f); err != nil {
		return 0, nil, err
	}
	f.OriginalTopics = c.principal.Topics
	page, err := s.cfg.Store.List(c.r.Context(), f, cursor, limit)
	if err != nil {
		return 0, nil, err
	}
	total, err := s.cfg.Store.Total(c.r.Context(), f)
	if err != nil {
		return 0, nil, err
	}
	out := RecordPage{Records: make([]Record, len(page.Records)), NextCursor: page.NextCursor,
		Total: total.Count, TotalIsEstimate: total.Estimate}
	for i := range page.Records {
		out.Records[i] = toRecord(&page.Records[i])
	}
	return http.StatusOK, out, nil
}

// listIncidents lists the causes of the waiting records the token may see, largest first.
func (s *Server) listIncidents(c *call) (int, any, error) {
	f, limit, err := incidentsQuery(c.r, s.cfg.Clock())
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
	incs, err := s.cfg.Store.Incidents(c.r.Context(), f, limit)
	if err != nil {
		return 0, nil, err
	}
	total, err := s.cfg.Store.IncidentsTotal(c.r.Context(), f)
	if err != nil {
		return 0, nil, err
	}
	out := IncidentList{Incidents: make([]Incident, len(incs)), Total: total.Count, TotalIsEstimate: total.Estimate}
	for i, in := range incs {
		out.Incidents[i] = Incident{Fingerprint: in.Fingerprint, ErrorClass: in.ErrorClass,
			MessageTemplate: in.MessageTemplate, OriginalTopic: in.OriginalTopic, Route: in.Route,
			Parked: in.Parked, Scheduled: in.Scheduled, FirstSeen: in.FirstSeen, LastSeen: in.LastSeen,
			SampleRecordID: in.SampleID, Last24H: in.Trend[:]}
	}
	return http.StatusOK, out, nil
}

// visibleRecord loads the record of the path, as not found when the token may not see it.
func (s *Server) visibleRecord(c *call) (store.Record, error) {
	id, err := pathID(c)
	if err != nil {
		return store.Record{}, err
	}
	rec, err := s.cfg.Store.Get(c.r.Context(), id)
	if err != nil {
		return store.Record{}, err
	}
	if !c.principal.Sees(rec.Origin.Topic) {
		return store.Record{}, errOutOfScope
	}
	return rec, nil
}

// errOutOfScope answers like a missing object: a token does not learn what exists outside
// its topics.
var errOutOfScope = fmt.Errorf("%w: outside the token's topics", store.ErrNotFound)

func (s *Server) getRecord(c *call) (int, any, error) {
	q, err := query(c.r, "unmask")
	if err != nil {
		return 0, nil, err
	}
	rec, err := s.visibleRecord(c)
	if err != nil {
		return 0, nil, err
	}
	clear, err := s.masks.unmaskParam(c, q.Get("unmask"), &rec)
	if err != nil {
		return 0, nil, err
	}
	m := s.cfg.Masking
	if clear {
		m = nil
	}
	out := toDetail(&rec, m)
	s.payloads.withDecoded(&out, &rec, m)
	return http.StatusOK, out, nil
}

// checkTarget allows a replay target: the record's original topic, or a configured replay
// topic that the token may see.
func (s *Server) checkTarget(c *call, field, target string) error {
	if target == "" {
		return nil
	}
	if err := text(field, target); err != nil {
		return err
	}
	if !slices.Contains(s.cfg.ReplayTopics, target) || !c.principal.Sees(target) {
		return badParam(field, "%q is not an allowed replay topic (replay_topics in the configuration)", target)
	}
	return nil
}

func (s *Server) replayRecord(c *call) (int, any, error) {
	var req ReplayRequest
	if err := decodeBody(c, &req, true); err != nil {
		return 0, nil, err
	}
	rec, err := s.visibleRecord(c)
	if err != nil {
		return 0, nil, err
	}
	if req.TargetTopic != rec.Origin.Topic {
		if err := s.checkTarget(c, "target_topic", req.TargetTopic); err != nil {
			return 0, nil, err
		}
	}
	switch {
	case req.TargetTopic == "" && rec.Origin.Topic == "":
		return 0, nil, badParam("target_topic", "the record has no original topic: give one of the replay topics")
	case req.TargetTopic == "" && !headers.ValidTopicName(rec.Origin.Topic):
		return 0, nil, badParam("target_topic", "the record's original topic is not a valid topic name: give one of the replay topics")
	}
	redriveTo, err := replayRedriveTo(req.RedriveTo)
	if err != nil {
		return 0, nil, err
	}
	key, err := idempotencyKey(c)
	if err != nil {
		return 0, nil, err
	}
	edit, err := replayEdit(&req)
	if err != nil {
		return 0, nil, err
	}
	if req.ValueSchemaVersion != 0 && len(req.ValueJSON) == 0 {
		return 0, nil, badParam("value_schema_version", "only with value_json")
	}
	if len(req.ValueJSON) > 0 {
		if req.Value != nil {
			return 0, nil, badParam("value_json", "give value or value_json, not both")
		}
		doc, err := s.masks.restoreJSON(s.payloads.decoded(rec.Value), req.ValueJSON)
		if err != nil {
			return 0, nil, err
		}
		v, err := s.payloads.valueFromJSON(&rec, doc, req.ValueSchemaVersion)
		if err != nil {
			return 0, nil, err
		}
		if edit == nil {
			edit = &store.Edit{}
		}
		edit.ValueSet, edit.Value = true, v
	}
	if rec.NoPayload() && (edit == nil || !edit.ValueSet) {
		return 0, nil, noPayloadRecord()
	}
	if err := s.masks.restoreEdit(&rec, edit); err != nil {
		return 0, nil, err
	}
	jr := store.JobRequest{
		JobSpec: store.JobSpec{Kind: store.JobReplay, RecordIDs: []int64{rec.ID}, TargetTopic: req.TargetTopic,
			RedriveTo: redriveTo, ResetRetry: req.ResetRetry, ConfirmedCount: 1, Edit: edit},
		IdempotencyKey: key,
	}
	if edit != nil {
		jr.Reason = editDiff(&rec, edit)
		if len(req.ValueJSON) > 0 {
			jr.Reason += "; value_json " + auditJSON(req.ValueJSON)
		}
	}
	if err := s.checkDestinations(c, &jr); err != nil {
		return 0, nil, err
	}
	return s.submit(c, jr)
}

func idempotencyKey(c *call) (string, error) {
	k := c.r.Header.Get("Idempotency-Key")
	if len(k) > 200 {
		return "", badParam("Idempotency-Key", "at most 200 characters")
	}
	return k, text("Idempotency-Key", k)
}

// submit stores a job; a retried request with the same idempotency key gets the same job.
func (s *Server) submit(c *call, req store.JobRequest) (int, any, error) {
	req.MaxActive = s.cfg.Limits.MaxActiveJobs
	job, replayed, err := s.cfg.Store.SubmitJob(c.r.Context(), req, c.actor)
	if err != nil {
		return 0, nil, err
	}
	if replayed {
		c.w.Header().Set("Idempotent-Replayed", "true")
	}
	return http.StatusAccepted, toJob(&job), nil
}

func reason(field, r string) (string, error) {
	r = strings.TrimSpace(r)
	if r == "" || len(r) > maxReasonBytes {
		return "", badParam(field, "required, at most %d bytes", maxReasonBytes)
	}
	return r, text(field, r)
}

func (s *Server) discardRecord(c *call) (int, any, error) {
	var req DiscardRequest
	if err := decodeBody(c, &req, false); err != nil {
		return 0, nil, err
	}
	why, err := reason("reason", req.Reason)
	if err != nil {
		return 0, nil, err
	}
	rec, err := s.visibleRecord(c)
	if err != nil {
		return 0, nil, err
	}
	if rec, err = s.cfg.Store.DiscardRecord(c.r.Context(), rec.ID, why, c.actor); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toRecord(&rec), nil
}

func (s *Server) retryNow(c *call) (int, any, error) {
	rec, err := s.visibleRecord(c)
	if err != nil {
		return 0, nil, err
	}
	if rec, err = s.cfg.Store.RetryNow(c.r.Context(), rec.ID, c.actor); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toRecord(&rec), nil
}

// maxBulkIDs bounds a bulk request by ids; larger selections go by filter.
const maxBulkIDs = 1000

// bulkStatuses are the statuses a bulk job may select; a filter without statuses selects
// parked records.
var bulkStatuses = []store.Status{store.StatusParked, store.StatusScheduled}

func (s *Server) bulk(kind store.JobKind) handler {
	return func(c *call) (int, any, error) {
		var req BulkRequest
		if err := decodeBody(c, &req, false); err != nil {
			return 0, nil, err
		}
		jr, err := s.bulkRequest(c, kind, &req)
		if err != nil {
			return 0, nil, err
		}
		if !req.DryRun {
			if jr.IdempotencyKey, err = idempotencyKey(c); err != nil {
				return 0, nil, err
			}
			if retried, err := s.retriedBulk(c, &jr, req.ConfirmCount); retried || err != nil {
				if err != nil {
					return 0, nil, err
				}
				return s.submit(c, jr)
			}
		}
		if err := s.checkDestinations(c, &jr); err != nil {
			return 0, nil, err
		}
		var count int64
		if jr.Filter != nil {
			count, err = s.cfg.Store.Count(c.r.Context(), *jr.Filter)
		} else {
			// Ids of records that do not exist, are out of the token's topics or are not
			// parked or scheduled are not counted: the job would skip them.
			count, err = s.cfg.Store.CountIDs(c.r.Context(), jr.RecordIDs,
				store.Filter{Statuses: bulkStatuses, OriginalTopics: c.principal.Topics})
		}
		if err != nil {
			return 0, nil, err
		}
		var none int64
		if kind == store.JobReplay {
			if none, err = s.cfg.Store.CountNoPayload(c.r.Context(), jr.Filter, jr.RecordIDs); err != nil {
				return 0, nil, err
			}
		}
		if req.DryRun {
			return http.StatusOK, DryRun{Count: count, NoPayload: none}, nil
		}
		if req.ConfirmCount == nil {
			return 0, nil, badParam("confirm_count", "required: the count of a dry run")
		}
		if *req.ConfirmCount != count {
			p := probCountMismatch.with("the selection changed since the dry run; confirm the new count")
			p.Count = &count
			return 0, nil, p
		}
		if none > 0 {
			return 0, nil, noPayloadSelection(none, count)
		}
		jr.ConfirmedCount = count
		return s.submit(c, jr)
	}
}

// retriedBulk reports whether jr retries a job its Idempotency-Key already created, and
// makes it the same request again: its selection is bounded as the first one was (the
// server bounds a filter at the time of the request), and its count is not checked again
// (the job may have changed the records since). SubmitJob then returns that job, or a
// conflict when the retry asks for something else.
func (s *Server) retriedBulk(c *call, jr *store.JobRequest, confirmed *int64) (bool, error) {
	if jr.IdempotencyKey == "" {
		return false, nil
	}
	prev, err := s.cfg.Store.JobByIdempotencyKey(c.r.Context(), c.actor.Name, jr.IdempotencyKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	if jr.Filter != nil && prev.Filter != nil && jr.Filter.StoredTo.After(prev.Filter.StoredTo) {
		jr.Filter.StoredTo = prev.Filter.StoredTo
	}
	if confirmed != nil {
		jr.ConfirmedCount = *confirmed
	}
	return true, nil
}

// bulkRequest validates a bulk request into a job request. A filter is bounded to the
// records stored before now, so the job does what the confirmed count covered.
func (s *Server) bulkRequest(c *call, kind store.JobKind, req *BulkRequest) (store.JobRequest, error) {
	jr := store.JobRequest{JobSpec: store.JobSpec{Kind: kind}}
	switch kind {
	case store.JobReplay:
		if req.Reason != "" {
			return jr, badParam("reason", "only for discards")
		}
		if err := s.checkTarget(c, "target_topic", req.TargetTopic); err != nil {
			return jr, err
		}
		if req.RatePerSecond < 0 {
			return jr, badParam("rate_per_second", "must not be negative")
		}
		redriveTo, err := replayRedriveTo(req.RedriveTo)
		if err != nil {
			return jr, err
		}
		jr.TargetTopic, jr.RedriveTo, jr.ResetRetry, jr.RatePerSecond = req.TargetTopic, redriveTo, req.ResetRetry, req.RatePerSecond
	case store.JobDiscard:
		if req.TargetTopic != "" || req.RedriveTo != "" || req.ResetRetry || req.RatePerSecond != 0 {
			return jr, badParam("target_topic", "target_topic, redrive_to, reset_retry and rate_per_second are for replays")
		}
		why, err := reason("reason", req.Reason)
		if err != nil {
			return jr, err
		}
		jr.Reason = why
	}
	switch {
	case (req.Filter == nil) == (req.IDs == nil):
		return jr, badParam("filter", "give exactly one of ids and filter")
	case req.IDs != nil:
		if len(req.IDs) == 0 || len(req.IDs) > maxBulkIDs {
			return jr, badParam("ids", "from 1 to %d ids; select more by filter", maxBulkIDs)
		}
		ids := slices.Clone(req.IDs)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		for _, id := range ids {
			if id < 1 {
				return jr, badParam("ids", "ids are positive")
			}
			if len(c.principal.Topics) > 0 {
				if err := s.checkVisible(c, id); err != nil {
					return jr, err
				}
			}
		}
		jr.RecordIDs = ids
	default:
		f, err := filterFromBody(req.Filter)
		if err != nil {
			return jr, err
		}
		if err := knownRoute(c, s.cfg.Store, "filter.route", f.Route); err != nil {
			return jr, err
		}
		if len(f.Statuses) == 0 {
			f.Statuses = []store.Status{store.StatusParked}
		}
		for _, st := range f.Statuses {
			if !slices.Contains(bulkStatuses, st) {
				return jr, badParam("filter.statuses", "bulk jobs select parked or scheduled records, not %q", st)
			}
		}
		if err := s.masks.contentSearch(c, &f); err != nil {
			return jr, err
		}
		f.OriginalTopics = c.principal.Topics
		now := s.cfg.Clock().UTC()
		if f.StoredTo.IsZero() || f.StoredTo.After(now) {
			f.StoredTo = now
		}
		jr.Filter = &f
	}
	return jr, nil
}

func (s *Server) checkVisible(c *call, id int64) error {
	rec, err := s.cfg.Store.Get(c.r.Context(), id)
	if err != nil {
		return err
	}
	if !c.principal.Sees(rec.Origin.Topic) {
		return errOutOfScope
	}
	return nil
}

func (s *Server) listJobs(c *call) (int, any, error) {
	before, limit, err := pageParams(c)
	if err != nil {
		return 0, nil, err
	}
	jobs, err := s.cfg.Store.ListJobs(c.r.Context(), before, limit, c.principal.Topics...)
	if err != nil {
		return 0, nil, err
	}
	total, err := s.cfg.Store.JobsTotal(c.r.Context(), c.principal.Topics...)
	if err != nil {
		return 0, nil, err
	}
	out := JobList{Jobs: make([]Job, len(jobs)), Total: total.Count, TotalIsEstimate: total.Estimate}
	for i := range jobs {
		out.Jobs[i] = toJob(&jobs[i])
	}
	if len(jobs) == limit {
		out.NextBefore = jobs[len(jobs)-1].ID
	}
	return http.StatusOK, out, nil
}

// pageParams reads before and limit, the paging of jobs.
func pageParams(c *call) (before int64, limit int, err error) {
	q, err := query(c.r, "before", "limit")
	if err != nil {
		return 0, 0, err
	}
	if limit, err = limitParam(q); err != nil {
		return 0, 0, err
	}
	before, err = positiveID("before", q.Get("before"), true)
	return before, limit, err
}

// visibleJob loads the job of the path, as not found when it may touch records of topics
// the token does not see.
func (s *Server) visibleJob(c *call) (store.Job, error) {
	id, err := pathID(c)
	if err != nil {
		return store.Job{}, err
	}
	job, err := s.cfg.Store.GetJob(c.r.Context(), id)
	if err != nil {
		return store.Job{}, err
	}
	if !c.principal.SeesAll(job.Topics) {
		return store.Job{}, errOutOfScope
	}
	return job, nil
}

func (s *Server) getJob(c *call) (int, any, error) {
	job, err := s.visibleJob(c)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toJob(&job), nil
}

func (s *Server) cancelJob(c *call) (int, any, error) {
	job, err := s.visibleJob(c)
	if err != nil {
		return 0, nil, err
	}
	job, err = s.cfg.Store.CancelJob(c.r.Context(), job.ID, c.actor)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toJob(&job), nil
}

func (s *Server) stats(c *call) (int, any, error) {
	if _, err := query(c.r); err != nil {
		return 0, nil, err
	}
	st, err := s.cfg.Store.Stats(c.r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := Stats{Counts: []StatCount{}, OldestParked: optTime(st.OldestParked)}
	for _, sc := range st.Counts {
		if c.principal.Sees(sc.OriginalTopic) {
			out.Counts = append(out.Counts, StatCount{DLQTopic: sc.DLQTopic, OriginalTopic: sc.OriginalTopic,
				Reason: sc.Reason, Status: sc.Status, Count: sc.Count})
		}
	}
	if len(c.principal.Topics) > 0 {
		out.OldestParked = nil // it may belong to a topic the token does not see
	}
	return http.StatusOK, out, nil
}

// parkedBuckets bounds a parked-over-time series: a week of hours, a year of days.
var parkedBuckets = map[string]struct {
	step          time.Duration
	def, most     int
	storeBucketID string
}{"hour": {time.Hour, 24, 168, store.BucketHour}, "day": {24 * time.Hour, 30, 366, store.BucketDay}}

// parkedOverTime counts the records that entered the parking store per hour or day (by
// stored_at), with how many of them are parked now; every bucket up to the current one,
// empty ones included.
func (s *Server) parkedOverTime(c *call) (int, any, error) {
	q, err := query(c.r, "bucket", "buckets")
	if err != nil {
		return 0, nil, err
	}
	name := q.Get("bucket")
	if name == "" {
		name = "hour"
	}
	b, ok := parkedBuckets[name]
	if !ok {
		return 0, nil, badParam("bucket", "must be hour or day")
	}
	n := b.def
	if v := q.Get("buckets"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > b.most {
			return 0, nil, badParam("buckets", "must be an integer from 1 to %d for %s", b.most, name)
		}
	}
	first := s.cfg.Clock().UTC().Truncate(b.step).Add(-time.Duration(n-1) * b.step)
	counts, err := s.cfg.Store.StoredOverTime(c.r.Context(), b.storeBucketID, first, c.principal.Topics...)
	if err != nil {
		return 0, nil, err
	}
	out := ParkedOverTime{Bucket: name, Points: make([]ParkedPoint, n)}
	for i := range out.Points {
		out.Points[i].Start = first.Add(time.Duration(i) * b.step)
	}
	for _, sc := range counts {
		if i := int(sc.Start.Sub(first) / b.step); i >= 0 && i < n {
			out.Points[i].Stored, out.Points[i].StillParked = sc.Stored, sc.Parked
		}
	}
	return http.StatusOK, out, nil
}

func (s *Server) listRoutes(c *call) (int, any, error) {
	if _, err := query(c.r); err != nil {
		return 0, nil, err
	}
	rcs, err := s.cfg.Store.RouteControls(c.r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := RouteList{Routes: make([]RouteControl, len(rcs))}
	for i := range rcs {
		out.Routes[i] = toRouteControl(&rcs[i])
	}
	return http.StatusOK, out, nil
}

func routeParam(c *call) (string, error) {
	r := c.r.PathValue("route")
	if r == "" || len(r) > 200 {
		return "", badParam("route", "from 1 to 200 characters")
	}
	return r, text("route", r)
}

func (s *Server) pauseRoute(paused bool) handler {
	return func(c *call) (int, any, error) {
		route, err := routeParam(c)
		if err != nil {
			return 0, nil, err
		}
		rc, err := s.cfg.Store.PauseRoute(c.r.Context(), route, paused, c.actor)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, toRouteControl(&rc), nil
	}
}

func (s *Server) runRoute(c *call) (int, any, error) {
	route, err := routeParam(c)
	if err != nil {
		return 0, nil, err
	}
	rc, err := s.cfg.Store.RequestRun(c.r.Context(), route, c.actor)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toRouteControl(&rc), nil
}

func (s *Server) listRuns(c *call) (int, any, error) {
	q, err := query(c.r, "route", "limit")
	if err != nil {
		return 0, nil, err
	}
	limit, err := limitParam(q)
	if err != nil {
		return 0, nil, err
	}
	runs, err := s.cfg.Store.ListRuns(c.r.Context(), q.Get("route"), limit)
	if err != nil {
		return 0, nil, err
	}
	out := RunList{Runs: make([]Run, len(runs))}
	for i := range runs {
		out.Runs[i] = toRun(&runs[i])
	}
	return http.StatusOK, out, nil
}

func (s *Server) listAudit(c *call) (int, any, error) {
	q, err := query(c.r, "before", "limit", "action", "actor", "route", "topic", "record_id", "job_id", "from", "to")
	if err != nil {
		return 0, nil, err
	}
	limit, err := limitParam(q)
	if err != nil {
		return 0, nil, err
	}
	f := store.AuditFilter{Topics: c.principal.Topics, Action: q.Get("action"), Actor: q.Get("actor"),
		Route: q.Get("route"), Topic: q.Get("topic")}
	var before int64
	for name, dst := range map[string]*int64{"before": &before, "record_id": &f.RecordID, "job_id": &f.JobID} {
		if *dst, err = positiveID(name, q.Get(name), true); err != nil {
			return 0, nil, err
		}
	}
	for name, dst := range map[string]*time.Time{"from": &f.From, "to": &f.To} {
		if *dst, err = parseTime(name, q.Get(name), s.cfg.Clock()); err != nil {
			return 0, nil, err
		}
	}
	entries, err := s.cfg.Store.SearchAudit(c.r.Context(), f, before, limit)
	if err != nil {
		return 0, nil, err
	}
	total, err := s.cfg.Store.AuditTotal(c.r.Context(), f)
	if err != nil {
		return 0, nil, err
	}
	out := AuditList{Entries: make([]AuditEntry, len(entries)), Total: total.Count, TotalIsEstimate: total.Estimate}
	for i := range entries {
		out.Entries[i] = toAudit(&entries[i], s.cfg.Masking)
	}
	if len(entries) == limit {
		out.NextBefore = entries[len(entries)-1].ID
	}
	return http.StatusOK, out, nil
}
