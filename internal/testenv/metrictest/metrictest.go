// Package metrictest reads what a Prometheus registry holds, for tests.
package metrictest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Sample is one series of a metric: its labels and its value (a counter's or a gauge's;
// a histogram's or a summary's sample count).
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Samples returns the series of metric name in g whose labels include match (every series
// of it when match is empty).
func Samples(tb testing.TB, g prometheus.Gatherer, name string, match map[string]string) []Sample {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatalf("gather metrics: %v", err)
	}
	var out []Sample
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			s := Sample{Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if l, ok := s.Labels[k]; !ok || l != v {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				s.Value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.Value = m.GetGauge().GetValue()
			case m.Histogram != nil:
				s.Value = float64(m.GetHistogram().GetSampleCount())
			case m.Summary != nil:
				s.Value = float64(m.GetSummary().GetSampleCount())
			default:
				s.Value = m.GetUntyped().GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}

// Sum adds up the values of the series Samples returns (0 when there is none).
func Sum(tb testing.TB, g prometheus.Gatherer, name string, match map[string]string) float64 {
	tb.Helper()
	var sum float64
	for _, s := range Samples(tb, g, name, match) {
		sum += s.Value
	}
	return sum
}
