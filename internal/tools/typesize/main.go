// Command typesize keeps every hand-written type small enough to hold in one's head, for
// `make lint`: it counts the methods declared on each type of the module's packages
// (pointer and value receivers alike; methods promoted from an embedded type are not
// declared on it) and fails when one has more than the limit, naming the type and its
// count. Generated files (`// Code generated ... DO NOT EDIT.`) are skipped: their
// generator decides their shape. A type past the limit is split by concern into parts with
// their own types. -list prints the largest types whatever their size.
package main

import (
	"flag"
	"fmt"
	"os"
)

// limit is the most methods a hand-written type may declare.
const limit = 30

func main() {
	root := flag.String("root", ".", "the module's directory")
	list := flag.Int("list", 0, "print the N largest types and exit 0")
	flag.Parse()
	types, err := Count(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "typesize:", err)
		os.Exit(1)
	}
	if *list > 0 {
		for _, t := range types[:min(*list, len(types))] {
			fmt.Printf("%4d %s\n", t.Methods, t)
		}
		return
	}
	findings := Over(types, limit)
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(os.Stderr, "typesize: %d type(s) above %d methods\n", len(findings), limit)
		os.Exit(1)
	}
}

// Over names each type that declares more than max methods, with its count.
func Over(types []Type, max int) []string {
	var findings []string
	for _, t := range types {
		if t.Methods > max {
			findings = append(findings, fmt.Sprintf("%s: %d methods, more than %d: split it by concern into parts with their own types", t, t.Methods, max))
		}
	}
	return findings
}
