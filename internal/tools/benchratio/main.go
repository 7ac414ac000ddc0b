// Command benchratio reads `go test -bench` output and prints, for every benchmark with
// sub-benchmarks named "raw" and "ours", each shared metric side by side with the ratio
// ours/raw. Raw baselines and our figures come from the same run, so the ratio is what
// we quote; absolute numbers depend on the machine.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A result line: name, iterations, then value/unit pairs.
var line = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

func main() {
	// parent → variant (raw|ours) → unit → value
	results := map[string]map[string]map[string]float64{}
	var order []string
	sc := bufio.NewScanner(os.Stdin)
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
	if len(order) == 0 {
		fmt.Println("benchratio: no raw/ours benchmark pairs in the input")
		return
	}
	fmt.Printf("\n%-48s %-10s %14s %14s %8s\n", "benchmark", "metric", "ours", "raw", "ours/raw")
	for _, parent := range order {
		ours, raw := results[parent]["ours"], results[parent]["raw"]
		units := make([]string, 0, len(ours))
		for u := range ours {
			if _, ok := raw[u]; ok {
				units = append(units, u)
			}
		}
		sort.Strings(units)
		for _, u := range units {
			ratio := "-"
			if raw[u] != 0 {
				ratio = fmt.Sprintf("%.2f", ours[u]/raw[u])
			}
			fmt.Printf("%-48s %-10s %14.4g %14.4g %8s\n", parent, u, ours[u], raw[u], ratio)
		}
	}
}
