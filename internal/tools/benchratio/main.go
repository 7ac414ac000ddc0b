// Command benchratio reads `go test -bench` output and prints, for every benchmark with
// sub-benchmarks named "raw" and "ours", each shared metric side by side with the ratio
// ours/raw. Raw baselines and our figures come from the same run, so the ratio is what
// we quote; absolute numbers depend on the machine.
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

// pairs maps a parent benchmark to its variants ("raw", "ours"), each to its metrics by unit.
type pairs map[string]map[string]map[string]float64

func main() {
	results, order := parse(os.Stdin)
	if len(order) == 0 {
		fmt.Println("benchratio: no raw/ours benchmark pairs in the input")
		return
	}
	fmt.Printf("\n%-48s %-10s %14s %14s %8s\n", "benchmark", "metric", "ours", "raw", "ours/raw")
	for _, parent := range order {
		for _, r := range ratios(results[parent]) {
			fmt.Printf("%-48s %-10s %14.4g %14.4g %8s\n", parent, r.unit, r.ours, r.raw, r.ratio)
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
		parent, variant := m[1][:i], m[1][i+1:]
		if variant != "raw" && variant != "ours" {
			continue
		}
		if results[parent] == nil {
			results[parent] = map[string]map[string]float64{}
			order = append(order, parent)
		}
		metrics := map[string]float64{}
		f := strings.Fields(m[3])
		for j := 0; j+1 < len(f); j += 2 {
			if v, err := strconv.ParseFloat(f[j], 64); err == nil {
				metrics[f[j+1]] = v
			}
		}
		results[parent][variant] = metrics
	}
	return results, order
}

type ratio struct {
	unit      string
	ours, raw float64
	ratio     string
}

// ratios lists the metrics both variants report, by unit, with ours/raw.
func ratios(variants map[string]map[string]float64) []ratio {
	ours, raw := variants["ours"], variants["raw"]
	var out []ratio
	for u, o := range ours {
		r, ok := raw[u]
		if !ok {
			continue
		}
		x := ratio{unit: u, ours: o, raw: r, ratio: "-"}
		if r != 0 {
			x.ratio = fmt.Sprintf("%.2f", o/r)
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].unit < out[j].unit })
	return out
}
