// Command benchratio reads `go test -bench` output and prints, for every benchmark with
// sub-benchmarks named "raw" and "ours", each shared metric side by side with the ratio
// ours/raw. Raw baselines and our figures come from the same run, so the ratio is what
// we quote; absolute numbers depend on the machine. A benchmark that runs its variants in
// several rounds (go names the repeats "raw#01", "ours#01", ...) is compared by the median
// of each side, and the spread of the per-round ratios is printed beside it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A result line: name, iterations, then value/unit pairs.
var line = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// repeat is the suffix go gives a sub-benchmark name used again.
var repeat = regexp.MustCompile(`#\d+$`)

// pairs maps a parent benchmark to its variants ("raw", "ours"), each to its samples by
// unit, one per round in order.
type pairs map[string]map[string]map[string][]float64

func main() {
	results, order := parse(os.Stdin)
	if len(order) == 0 {
		fmt.Println("benchratio: no raw/ours benchmark pairs in the input")
		return
	}
	fmt.Printf("\n%-48s %-10s %14s %14s %8s  %s\n", "benchmark", "metric", "ours", "raw", "ours/raw", "rounds")
	for _, parent := range order {
		for _, r := range ratios(results[parent]) {
			fmt.Printf("%-48s %-10s %14.4g %14.4g %8s  %s\n", parent, r.unit, r.ours, r.raw, r.ratio, r.rounds)
		}
	}
}

// parse reads benchmark output and returns the raw/ours results in order of appearance.
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
		if variant != "raw" && variant != "ours" {
			continue
		}
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
	unit      string
	ours, raw float64 // medians
	ratio     string  // of the medians
	rounds    string  // how many, and the range of the per-round ratios when more than one
}

// ratios lists the metrics both variants report, by unit, with ours/raw.
func ratios(variants map[string]map[string][]float64) []ratio {
	ours, raw := variants["ours"], variants["raw"]
	var out []ratio
	for u, o := range ours {
		r, ok := raw[u]
		if !ok {
			continue
		}
		x := ratio{unit: u, ours: median(o), raw: median(r), ratio: "-", rounds: strconv.Itoa(min(len(o), len(r)))}
		if x.raw != 0 {
			x.ratio = fmt.Sprintf("%.2f", x.ours/x.raw)
		}
		if lo, hi, ok := spread(o, r); ok && len(o) > 1 {
			x.rounds += fmt.Sprintf(" (%.2f–%.2f)", lo, hi)
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

// spread is the lowest and highest ratio of the rounds, pairing each round's samples.
func spread(ours, raw []float64) (lo, hi float64, ok bool) {
	for i := range min(len(ours), len(raw)) {
		if raw[i] == 0 {
			return 0, 0, false
		}
		r := ours[i] / raw[i]
		if i == 0 || r < lo {
			lo = r
		}
		if i == 0 || r > hi {
			hi = r
		}
	}
	return lo, hi, true
}
