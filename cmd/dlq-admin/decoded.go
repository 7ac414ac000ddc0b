package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/dlqops/dlq/internal/api"
)

// printDecoded adds the registry's reading of a key or value to `show`: its format and
// schema, then the JSON (cut like the bytes' preview), or why it did not decode.
func printDecoded(w *tabwriter.Writer, name string, d *api.Decoded) {
	if d == nil {
		return
	}
	schema := fmt.Sprintf("schema id %d", d.SchemaID)
	if d.Subject != "" {
		schema += fmt.Sprintf(" (%s v%d)", printable(d.Subject), d.Version)
	}
	if d.Error != "" {
		fmt.Fprintf(w, "%s not decoded\t%s: %s\n", name, schema, printable(d.Error))
		return
	}
	fmt.Fprintf(w, "%s decoded\t%s %s: %s\n", name, d.Format, schema, truncate(printable(string(d.JSON)), 200))
}
