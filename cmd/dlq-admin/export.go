package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/api"
)

// exportCommand writes the records a filter selects as JSON lines, for a file or a pipe:
// each line what `show -o json` prints for the record.
func exportCommand(f *clientFlags) *cobra.Command {
	var ff filterFlags
	cmd := &cobra.Command{
		Use:   "export [filters] > FILE",
		Short: "Write the records a filter selects as JSON lines (key, value, headers), oldest first",
		Long: "Streams every record the filters select (the list command's filters) to standard output,\n" +
			"one JSON object per line, as GET /v1/records/{id} answers it. The count goes to standard\n" +
			"error. An export the server cut short fails, saying how many whole records arrived.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			q, err := ff.params(time.Now())
			if err != nil {
				return err
			}
			n, err := c.Export(cmd.Context(), api.ExportRecordsParams{Status: q.Status, Reason: q.Reason,
				DLQTopic: q.DLQTopic, OriginalTopic: q.OriginalTopic, ErrorClass: q.ErrorClass,
				ErrorContains: q.ErrorContains, Fingerprint: q.Fingerprint, Route: q.Route, Key: q.Key, KeyB64: q.KeyB64,
				StoredFrom: q.StoredFrom, StoredTo: q.StoredTo, ValueContains: q.ValueContains,
				ValueContainsB64: q.ValueContainsB64, KeyContains: q.KeyContains, Header: q.Header,
				HeaderValueContains: q.HeaderValueContains}, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d records\n", n)
			return nil
		},
	}
	ff.add(cmd, f)
	return cmd
}
