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
	got := ratios(results["BenchmarkPark"])
	require.Equal(t, []ratio{
		{unit: "B/op", ours: 20, raw: 10, ratio: "2.00", rounds: "1"},
		{unit: "ns/op", ours: 1500, raw: 1000, ratio: "1.50", rounds: "1"},
		{unit: "rec/s", ours: 40000, raw: 50000, ratio: "0.80", rounds: "1"},
	}, got)
	require.Empty(t, ratios(results["BenchmarkCodec"]), "no raw side, no ratio")
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
	got := ratios(results["BenchmarkRedrive"])
	require.Equal(t, ratio{unit: "rec/s", ours: 88000, raw: 110000, ratio: "0.80", rounds: "3 (0.70–0.90)"}, got[1])
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
	got := ratios(results["BenchmarkWorker"])
	require.Equal(t, ratio{unit: "rec/s", ours: 100, raw: 200, ratio: "0.90", rounds: "3 (0.50–1.10)"}, got[1])
}
