package redrive

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dlqops/dlq/internal/routes"
)

// groupRedriven counts a route's redrives by the consumer group that failed them: the
// route's metric_groups by name, any other as "other", none as "unknown", so that a
// group name written by anybody never becomes a label.
type groupRedriven struct {
	route  routes.Config
	vec    *prometheus.CounterVec
	series map[string]prometheus.Counter // by label: at most metric_groups plus two
}

func newGroupRedriven(r routes.Config, vec *prometheus.CounterVec) *groupRedriven {
	return &groupRedriven{route: r, vec: vec, series: map[string]prometheus.Counter{}}
}

// label is the label group is counted under.
func (g *groupRedriven) label(group string) string { return g.route.MetricGroup(group) }

// inc counts one redrive of a record whose label is label.
func (g *groupRedriven) inc(label string) {
	c := g.series[label]
	if c == nil {
		c = g.vec.WithLabelValues(g.route.Name, label, g.route.RedriveTo)
		g.series[label] = c
	}
	c.Inc()
}
