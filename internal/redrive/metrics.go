package redrive

import "github.com/prometheus/client_golang/prometheus"

// metrics are the worker's Prometheus series, labelled by route.
type metrics struct {
	redriven     *prometheus.CounterVec
	parked       *prometheus.CounterVec
	scheduled    *prometheus.CounterVec
	errors       *prometheus.CounterVec
	inFlight     *prometheus.GaugeVec
	runDuration  *prometheus.HistogramVec
	lag          *prometheus.GaugeVec
	offsetResets *prometheus.CounterVec
	lastSuccess  *prometheus.GaugeVec
	lostMidRun   *prometheus.CounterVec
	oldestDue    *prometheus.GaugeVec
	// sourceHeadroom is how many records the oldest unresolved share-group pointer to a
	// source partition is above that partition's log start: near 0, pointers expire
	// before a redrive (see headroom.probe).
	sourceHeadroom *prometheus.GaugeVec
	// sourceSeeks counts the source fetcher's (re)starts at a new offset: about one per
	// source partition while pointers follow their source's order.
	sourceSeeks *prometheus.CounterVec
	// headerWarnings counts decoder warnings by kind, a closed set (headers.WarningKind).
	headerWarnings *prometheus.CounterVec
	// readPath is 1 for the read path each route uses: poll where queue was configured
	// means the binary links a release kafkafast was not checked against.
	readPath *prometheus.GaugeVec
	// The route's breaker (breaker.go): its state (0 closed, 1 open, 2 half-open), its
	// transitions by the state entered, and the records it held as scheduled.
	breakerState       *prometheus.GaugeVec
	breakerTransitions *prometheus.CounterVec
	breakerHeld        *prometheus.CounterVec
	// The breakers of causes held apart (breaker_cause.go), by fingerprint: 1 open, 2
	// half-open; a closed one's series is deleted.
	causeBreakerState *prometheus.GaugeVec
	// transactions counts an exactly_once route's Kafka transactions by outcome:
	// committed, failed or fenced (the route stops; its records wait uncommitted in the
	// DLQ, or a newer owner of its partitions redrives them).
	transactions *prometheus.CounterVec
	// groupRedriven counts redrives by the consumer group that failed them (groupmetrics.go).
	groupRedriven *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		redriven: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_redriven_total",
			Help: "Records produced to their original topic (from the DLQ or from the scheduled set)."}, []string{"route"}),
		parked: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_parked_total",
			Help: "Records parked in PostgreSQL for a human, by reason."}, []string{"route", "reason"}),
		scheduled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_scheduled_total",
			Help: "Records not yet due, moved to PostgreSQL as scheduled."}, []string{"route"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_errors_total",
			Help: "Transient failures that stalled a partition or a run (retried), by kind."}, []string{"route", "kind"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_in_flight",
			Help: "Records read and not yet acknowledged or stored."}, []string{"route"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dlq_worker_run_duration_seconds",
			Help: "Duration of redrive runs, by outcome.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 16)}, []string{"route", "status"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_lag",
			Help: "DLQ records not yet committed at the last run start or end, per partition."}, []string{"route", "topic", "partition"}),
		offsetResets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_offset_resets_total",
			Help: "Committed offsets that disagreed with the ledger or the log, by cause: not_found, jump, backward, below_log_start."}, []string{"route", "topic", "partition", "cause"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_last_success_timestamp_seconds",
			Help: "Unix time of the end of the last run that read every partition it held to its high watermark."}, []string{"route"}),
		lostMidRun: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_partitions_lost_total",
			Help: "Partitions a run lost without a handover (the group session expired); each fails its run."}, []string{"route"}),
		oldestDue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_oldest_due_age_seconds",
			Help: "How long the oldest due scheduled record of the route has waited to be redriven (0: none)."}, []string{"route"}),
		sourceHeadroom: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_source_headroom_records",
			Help: "Records between the oldest unresolved share-group dead letter and its source partition's log start, per source partition (negative: already gone)."}, []string{"route", "topic", "partition"}),
		sourceSeeks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_source_seeks_total",
			Help: "Times the source fetcher of share-group dead letters started reading a source partition at a new offset."}, []string{"route"}),
		headerWarnings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_header_warnings_total",
			Help: "Header fields of DLQ records left unknown (malformed value, duplicated key), by kind."}, []string{"route", "kind"}),
		readPath: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_read_path",
			Help: "1 for the read path each route uses: queue (kafkafast) or poll (confluent-kafka-go's public API: configured, or queue's fallback with an unchecked release)."}, []string{"route", "path"}),
		breakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_route_breaker_state",
			Help: "The route's breaker: 0 closed (redriving), 1 open (most of what it redrove came back, or an operator forced it open: records wait as scheduled), 2 half-open (probing)."}, []string{"route"}),
		breakerTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_route_breaker_transitions_total",
			Help: "Transitions of the route's breaker, by the state entered: open, half_open, closed, and forced_open, forced_closed by an operator's override."}, []string{"route", "state"}),
		breakerHeld: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_route_breaker_held_total",
			Help: "Records due for a redrive that the route's open breaker kept in PostgreSQL as scheduled instead."}, []string{"route"}),
		causeBreakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_cause_breaker_state",
			Help: "The breaker of one cause (fingerprint, as in GET /v1/incidents) that most of what came back to the route shared: 1 open (its records wait as scheduled, other causes flow), 2 half-open (probing); absent once closed. At most 8 per route."}, []string{"route", "fingerprint"}),
		transactions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_transactions_total",
			Help: "Kafka transactions of exactly_once routes (redrives and DLQ offsets), by outcome: committed, failed, fenced."}, []string{"route", "outcome"}),
		groupRedriven: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_group_redriven_total",
			Help: "Records redriven, by the consumer group that failed them (the route's metric_groups by name, any other as other, none named as unknown) and the route's redrive_to."}, []string{"route", "group", "redrive_to"}),
	}
	for _, c := range []prometheus.Collector{m.redriven, m.parked, m.scheduled, m.errors, m.inFlight, m.runDuration, m.lag, m.offsetResets, m.lastSuccess, m.lostMidRun, m.oldestDue, m.sourceHeadroom, m.sourceSeeks, m.headerWarnings, m.readPath,
		m.breakerState, m.breakerTransitions, m.breakerHeld, m.causeBreakerState, m.transactions, m.groupRedriven} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
