package doctor

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// Options is what Run checks: the parts of a worker's configuration (already loaded and
// valid) it needs, the share groups whose dead letters a route reads, and how long each
// network check may take before it is a finding.
type Options struct {
	Kafka       kafkaclient.Config
	Routes      []routes.Config
	Database    store.Config
	ShareGroups []string
	Timeout     time.Duration
}

// Report is the outcome of every check: Problems make the doctor fail, Notes are advice.
// A check that could not run is a problem, so no problem means every check ran.
type Report struct {
	Problems []Finding
	Notes    []Finding
}

// Run checks what the worker needs before it can redrive anything: the cluster answers,
// every route's topics exist, the share-group dead-letter set-up (ShareGroupDLQs), and
// PostgreSQL answers with every migration applied. A check whose dependency failed is
// not run, and says so. Each network call is bounded by o.Timeout.
func Run(ctx context.Context, o Options) Report {
	var r Report
	r.kafka(ctx, o)
	r.postgres(ctx, o)
	return r
}

func (r *Report) problem(subject, format string, args ...any) {
	r.Problems = append(r.Problems, Finding{Subject: subject, Problem: fmt.Sprintf(format, args...)})
}

// kafka checks the cluster: connectivity first, then the routes' topics and the
// share-group DLQs, which need it.
func (r *Report) kafka(ctx context.Context, o Options) {
	k := o.Kafka
	a, err := kafkaclient.NewAdmin(k)
	if err != nil {
		r.problem("kafka", "cannot build a client: %v", err)
		return
	}
	defer a.Close()
	md, err := a.GetMetadata(nil, true, int(o.Timeout.Milliseconds()))
	if err != nil || len(md.Brokers) == 0 {
		r.problem("kafka", "no broker of %s answered within %s (%v): topics and share-group DLQs not checked", k.BootstrapServers, o.Timeout, err)
		return
	}
	r.routeTopics(o.Routes, md)

	var topics []string
	for _, rc := range o.Routes {
		topics = append(topics, rc.Topics...)
	}
	// share.version is read over a raw connection, which only a PLAINTEXT listener
	// allows (confluent-kafka-go does not expose feature levels).
	var features func(context.Context) (map[string]int16, error)
	if proto := strings.ToLower(k.Extra["security.protocol"]); proto == "" || proto == "plaintext" {
		addr := strings.TrimSpace(strings.Split(k.BootstrapServers, ",")[0])
		features = func(ctx context.Context) (map[string]int16, error) { return FinalizedFeatures(ctx, addr) }
	} else {
		r.Notes = append(r.Notes, Finding{Subject: "cluster", Problem: "share.version not checked over " + proto + ": run kafka-features.sh describe", Advice: true})
	}
	sctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	found, err := ShareGroupDLQs(sctx, a.AdminClient, topics, o.ShareGroups, features)
	if err != nil {
		r.problem("kafka", "share-group DLQs not checked: %v", err)
		return
	}
	for _, f := range found {
		if f.Advice {
			r.Notes = append(r.Notes, f)
		} else {
			r.Problems = append(r.Problems, f)
		}
	}
}

// routeTopics checks that each route's topic exists, and that each of its patterns
// matches one: a route with nothing to read is never ready.
func (r *Report) routeTopics(rcs []routes.Config, md *kafka.Metadata) {
	for _, rc := range rcs {
		for _, t := range rc.Topics {
			if !strings.HasPrefix(t, "^") {
				if _, ok := md.Topics[t]; !ok {
					r.problem("route "+rc.Name, "topic %s does not exist", t)
				}
				continue
			}
			re, err := regexp.Compile(t)
			if err != nil {
				r.problem("route "+rc.Name, "topic pattern %s: %v", t, err)
				continue
			}
			matched := false
			for name := range md.Topics {
				matched = matched || re.MatchString(name)
			}
			if !matched {
				r.problem("route "+rc.Name, "pattern %s matches no topic", t)
			}
		}
	}
}

// postgres checks that the database answers and has every migration the worker needs.
func (r *Report) postgres(ctx context.Context, o Options) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	states, err := store.MigrationStatus(ctx, o.Database.URL)
	if err != nil {
		r.problem("postgresql", "no answer within %s: %v", o.Timeout, err)
		return
	}
	var pending []string
	for _, s := range states {
		if !s.Applied {
			pending = append(pending, s.Name)
		}
	}
	switch {
	case len(pending) > 0 && o.Database.MigrateOnStart:
		r.Notes = append(r.Notes, Finding{Subject: "postgresql", Advice: true, Problem: fmt.Sprintf("%d migration(s) not applied yet (the first: %s): the worker applies them at start (database.migrate_on_start)", len(pending), pending[0])})
	case len(pending) > 0:
		r.problem("postgresql", "%d migration(s) not applied (the first: %s): run `dlq-worker migrate up` or set database.migrate_on_start", len(pending), pending[0])
	}
}
