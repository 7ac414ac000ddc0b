package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/api"
)

// incidentsCommand lists the causes of the waiting records: the few rows an on-call
// engineer acts on, each with the fingerprint that a list or bulk command takes.
func incidentsCommand(f *clientFlags) *cobra.Command {
	var ff filterFlags
	var limit int
	cmd := &cobra.Command{
		Use:   "incidents",
		Short: "The causes of the parked and scheduled records, largest first",
		Long: "Records grouped by error class, error message with its numbers, ids and quoted values\n" +
			"replaced, original topic and route. Act on one with --fingerprint, e.g.\n" +
			"dlq-admin bulk discard --fingerprint FP --reason ...",
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
			list, err := c.ListIncidents(cmd.Context(), api.ListIncidentsParams{Status: q.Status, Reason: q.Reason,
				DLQTopic: q.DLQTopic, OriginalTopic: q.OriginalTopic, ErrorClass: q.ErrorClass,
				ErrorContains: q.ErrorContains, Fingerprint: q.Fingerprint, Route: q.Route, Key: q.Key, KeyB64: q.KeyB64,
				StoredFrom: q.StoredFrom, StoredTo: q.StoredTo, ValueContains: q.ValueContains,
				ValueContainsB64: q.ValueContainsB64, KeyContains: q.KeyContains, Header: q.Header,
				HeaderValueContains: q.HeaderValueContains, Limit: &limit})
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), list, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, "FINGERPRINT\tPARKED\tSCHEDULED\tORIGINAL TOPIC\tROUTE\tERROR\tFIRST SEEN\tLAST SEEN\tSAMPLE")
				for _, in := range list.Incidents {
					fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\n", in.Fingerprint, in.Parked, in.Scheduled,
						printable(dash(in.OriginalTopic)), printable(in.Route),
						printable(truncate(errorText(in.ErrorClass, in.MessageTemplate), 80)),
						ts(&in.FirstSeen), ts(&in.LastSeen), in.SampleRecordID)
				}
				fmt.Fprintln(w, totalLine(list.Total, list.TotalIsEstimate, "incidents"))
			})
		},
	}
	ff.add(cmd, f)
	cmd.Flags().IntVar(&limit, "limit", 50, "incidents (at most 500)")
	return cmd
}
