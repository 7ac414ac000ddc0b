// Command benchratio reads `go test -bench` output and prints, for every benchmark with a
// sub-benchmark named "ours" beside baselines (any other sub-benchmark: "raw", or a peer
// such as "peer"), each metric that ours and a baseline share side by side with the ratio
// ours/baseline. Baselines and our figures come from the same run, so the ratio is what
// we quote; absolute numbers depend on the machine. A benchmark that runs its variants in
// several rounds (go names the repeats "raw#01", "ours#01", ...) pairs the two sides of each
// round: the ratio is the median of the per-round ratios, printed with their spread; the
// medians of each side are printed for scale. A ratio of medians taken from different
// rounds would compare a quiet spell of the machine with a busy one.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A result line: name, iterations, then value/unit pairs.
var line = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// repeat is the suffix go gives a sub-benchmark name used again.
var repeat = regexp.MustCompile(`#\d+$`)

// pairs maps a parent benchmark to its variants ("ours", "raw", "peer", ...), each to its
// samples by unit, one per round in order.
type pairs map[string]map[string]map[string][]float64

func main() {
	results, order := parse(os.Stdin)
	var rows []string
	for _, parent := range order {
		for _, base := range baselines(results[parent]) {
			for _, r := range ratios(results[parent], base) {
				rows = append(rows, fmt.Sprintf("%-48s %-14s %-10s %14.4g %14.4g %9s  %s", parent, base, r.unit, r.ours, r.base, r.ratio, r.rounds))
			}
		}
	}
	if len(rows) == 0 {
		fmt.Println("benchratio: no benchmark with an \"ours\" sub-benchmark beside a baseline in the input")
		return
	}
	fmt.Printf("\n%-48s %-14s %-10s %14s %14s %9s  %s\n", "benchmark", "baseline", "metric", "ours", "baseline", "ours/base", "rounds")
	for _, r := range rows {
		fmt.Println(r)
	}
}

// parse reads benchmark output and returns the results of sub-benchmarks by parent, the
// parents in order of appearance.
func parse(in io.Reader) (pairs, []string) {
	results := pairs{}
	var order []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		i := strings.LastIndex(m[1], "/")
		if i < 0 {
			continue
		}
		parent, variant := m[1][:i], repeat.ReplaceAllString(m[1][i+1:], "")
		if results[parent] == nil {
			results[parent] = map[string]map[string][]float64{}
			order = append(order, parent)
		}
		if results[parent][variant] == nil {
			results[parent][variant] = map[string][]float64{}
		}
		f := strings.Fields(m[3])
		for j := 0; j+1 < len(f); j += 2 {
			if v, err := strconv.ParseFloat(f[j], 64); err == nil {
				results[parent][variant][f[j+1]] = append(results[parent][variant][f[j+1]], v)
			}
		}
	}
	return results, order
}

type ratio struct {
	unit       string
	ours, base float64 // medians of each side, for scale
	ratio      string  // median of the per-round ratios ours/base
	rounds     string  // how many, and the range of the per-round ratios when more than one
}

// baselines lists the variants ours is compared with: "raw" first, then the others by name;
// none without "ours".
func baselines(variants map[string]map[string][]float64) []string {
	if variants["ours"] == nil {
		return nil
	}
	var out []string
	for v := range variants {
		if v != "ours" {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if (a == "raw") != (b == "raw") {
			if a == "raw" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// ratios lists the metrics ours and the variant base both report, by unit, with ours/base.
func ratios(variants map[string]map[string][]float64, base string) []ratio {
	ours, baseline := variants["ours"], variants[base]
	var out []ratio
	for u, o := range ours {
		r, ok := baseline[u]
		if !ok {
			continue
		}
		n := min(len(o), len(r))
		x := ratio{unit: u, ours: median(o), base: median(r), ratio: "-", rounds: strconv.Itoa(n)}
		if rs, ok := perRound(o, r); ok {
			x.ratio = fmt.Sprintf("%.2f", median(rs))
			if n > 1 {
				x.rounds += fmt.Sprintf(" (%.2f–%.2f)", slices.Min(rs), slices.Max(rs))
			}
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].unit < out[j].unit })
	return out
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// perRound is ours/base for each round, pairing the samples of the same round; not ok
// when a baseline sample is zero.
func perRound(ours, base []float64) ([]float64, bool) {
	rs := make([]float64, min(len(ours), len(base)))
	for i := range rs {
		if base[i] == 0 {
			return nil, false
		}
		rs[i] = ours[i] / base[i]
	}
	return rs, len(rs) > 0
}
