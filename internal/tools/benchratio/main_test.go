package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAndRatios(t *testing.T) {
	out := `goos: linux
BenchmarkPark/raw-2   	      10	 1000 ns/op	   50000 rec/s	      10 B/op
BenchmarkPark/ours-2  	      10	 1500 ns/op	   40000 rec/s	      20 B/op
BenchmarkCodec/ours   	  100000	  250 ns/op	       8 allocs/op
BenchmarkAlone-2      	     100	  999 ns/op
PASS`
	results, order := parse(strings.NewReader(out))
	require.Equal(t, []string{"BenchmarkPark", "BenchmarkCodec"}, order)
	got := ratios(results["BenchmarkPark"], "raw")
	require.Equal(t, []ratio{
		{unit: "B/op", ours: 20, base: 10, ratio: "2.00", rounds: "1"},
		{unit: "ns/op", ours: 1500, base: 1000, ratio: "1.50", rounds: "1"},
		{unit: "rec/s", ours: 40000, base: 50000, ratio: "0.80", rounds: "1"},
	}, got)
	require.Empty(t, ratios(results["BenchmarkCodec"], "raw"), "no raw side, no ratio")
}

func TestRoundsCompareMedians(t *testing.T) {
	out := `BenchmarkRedrive/raw-2     	1	1 ns/op	  100000 rec/s
BenchmarkRedrive/ours-2    	1	1 ns/op	   70000 rec/s
BenchmarkRedrive/raw#01-2  	1	1 ns/op	  120000 rec/s
BenchmarkRedrive/ours#01-2 	1	1 ns/op	  108000 rec/s
BenchmarkRedrive/raw#02-2  	1	1 ns/op	  110000 rec/s
BenchmarkRedrive/ours#02-2 	1	1 ns/op	   88000 rec/s`
	results, order := parse(strings.NewReader(out))
	require.Equal(t, []string{"BenchmarkRedrive"}, order)
	got := ratios(results["BenchmarkRedrive"], "raw")
	require.Equal(t, ratio{unit: "rec/s", ours: 88000, base: 110000, ratio: "0.80", rounds: "3 (0.70–0.90)"}, got[1])
}

// Rounds are paired: the ratio is the median of the per-round ratios (0.90, 0.50, 1.10),
// not the ratio of each side's median (100/200 = 0.50), which would set the quiet round of
// one side against the busy round of the other.
func TestRatioIsMedianOfPerRoundRatios(t *testing.T) {
	out := `BenchmarkWorker/raw-2      	1	1 ns/op	     100 rec/s
BenchmarkWorker/ours-2     	1	1 ns/op	      90 rec/s
BenchmarkWorker/ours#01-2  	1	1 ns/op	     100 rec/s
BenchmarkWorker/raw#01-2   	1	1 ns/op	     200 rec/s
BenchmarkWorker/raw#02-2   	1	1 ns/op	     300 rec/s
BenchmarkWorker/ours#02-2  	1	1 ns/op	     330 rec/s`
	results, _ := parse(strings.NewReader(out))
	got := ratios(results["BenchmarkWorker"], "raw")
	require.Equal(t, ratio{unit: "rec/s", ours: 100, base: 200, ratio: "0.90", rounds: "3 (0.50–1.10)"}, got[1])
}

// A benchmark may compare ours with several baselines (a peer in two modes, rotated each
// round): each baseline gets its own ratios, paired round by round with ours.
func TestEveryBaselineIsPairedWithOurs(t *testing.T) {
	out := `BenchmarkWorkerVsPeer/peer-2            	1	1 ns/op	     200 rec/s	  10 lost-rec
BenchmarkWorkerVsPeer/peer-acks-all-2   	1	1 ns/op	     100 rec/s	   0 lost-rec
BenchmarkWorkerVsPeer/ours-2            	1	1 ns/op	     120 rec/s	   0 lost-rec
BenchmarkWorkerVsPeer/peer-acks-all#01-2	1	1 ns/op	     200 rec/s	   0 lost-rec
BenchmarkWorkerVsPeer/ours#01-2         	1	1 ns/op	     300 rec/s	   0 lost-rec
BenchmarkWorkerVsPeer/peer#01-2         	1	1 ns/op	     250 rec/s	   0 lost-rec
BenchmarkWorkerVsPeer/ours#02-2         	1	1 ns/op	     150 rec/s	   0 lost-rec
BenchmarkWorkerVsPeer/peer#02-2         	1	1 ns/op	     100 rec/s	   2 lost-rec
BenchmarkWorkerVsPeer/peer-acks-all#02-2	1	1 ns/op	     100 rec/s	   0 lost-rec
BenchmarkAlone/small-2                  	1	1 ns/op`
	results, order := parse(strings.NewReader(out))
	require.Equal(t, []string{"BenchmarkWorkerVsPeer", "BenchmarkAlone"}, order)
	require.Equal(t, []string{"peer", "peer-acks-all"}, baselines(results["BenchmarkWorkerVsPeer"]))
	require.Empty(t, baselines(results["BenchmarkAlone"]), "no ours, nothing to compare")
	// ours/peer per round: 0.60, 1.20, 1.50; ours/peer-acks-all: 1.20, 1.50, 1.50.
	require.Equal(t, []ratio{
		{unit: "lost-rec", ours: 0, base: 2, ratio: "-", rounds: "3"},
		{unit: "ns/op", ours: 1, base: 1, ratio: "1.00", rounds: "3 (1.00–1.00)"},
		{unit: "rec/s", ours: 150, base: 200, ratio: "1.20", rounds: "3 (0.60–1.50)"},
	}, ratios(results["BenchmarkWorkerVsPeer"], "peer"))
	require.Equal(t, ratio{unit: "rec/s", ours: 150, base: 100, ratio: "1.50", rounds: "3 (1.20–1.50)"},
		ratios(results["BenchmarkWorkerVsPeer"], "peer-acks-all")[2])
	require.Equal(t, []string{"raw", "a", "z"}, baselines(map[string]map[string][]float64{
		"z": {}, "ours": {}, "raw": {}, "a": {}}), "raw first")
}
