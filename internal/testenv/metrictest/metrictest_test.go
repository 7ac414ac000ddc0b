package metrictest_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// Samples selects the series whose labels include the match and reads each kind's value;
// Sum adds them up.
func TestSamplesAndSum(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total"}, []string{"route", "kind"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds"}, []string{"status"})
	reg.MustRegister(c, g, h)
	c.WithLabelValues("a", "x").Add(2)
	c.WithLabelValues("a", "y").Add(3)
	c.WithLabelValues("b", "x").Add(5)
	g.Set(-1.5)
	h.WithLabelValues("ok").Observe(1)
	h.WithLabelValues("ok").Observe(2)

	require.Equal(t, []metrictest.Sample{{Labels: map[string]string{"route": "a", "kind": "x"}, Value: 2}},
		metrictest.Samples(t, reg, "c_total", map[string]string{"route": "a", "kind": "x"}))
	require.Equal(t, 5.0, metrictest.Sum(t, reg, "c_total", map[string]string{"route": "a"}))
	require.Equal(t, 7.0, metrictest.Sum(t, reg, "c_total", map[string]string{"kind": "x"}))
	require.Equal(t, 10.0, metrictest.Sum(t, reg, "c_total", nil))
	require.Zero(t, metrictest.Sum(t, reg, "c_total", map[string]string{"route": "z"}))
	require.Equal(t, -1.5, metrictest.Sum(t, reg, "g", nil))
	require.Equal(t, 2.0, metrictest.Sum(t, reg, "h_seconds", map[string]string{"status": "ok"}), "a histogram's sample count")
	require.Empty(t, metrictest.Samples(t, reg, "absent", nil))
	require.Empty(t, metrictest.Samples(t, reg, "c_total", map[string]string{"reason": ""}), "a label the series lack")
}
