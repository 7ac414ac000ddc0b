package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/reltime"
)

// operateCommands are the route controls, retry-now, runs and the audit log: with list,
// show, replay, discard, bulk, jobs and stats, the CLI does all the API does.
func operateCommands(f *clientFlags) []*cobra.Command {
	cmds := []*cobra.Command{routesCommand(f), retryNowCommand(f), runsCommand(f), auditCommand(f)}
	for _, a := range []struct{ name, short string }{
		{"pause", "Pause a route: its workers stop redriving it until resume"},
		{"resume", "Resume a paused route"},
		{"run", "Ask the route's workers to run it now, outside its schedule"},
	} {
		cmds = append(cmds, &cobra.Command{
			Use:               a.name + " ROUTE",
			Short:             a.short,
			Args:              cobra.ExactArgs(1),
			ValidArgsFunction: f.completeRoutes,
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := f.client()
				if err != nil {
					return err
				}
				rc, err := c.RouteAction(cmd.Context(), args[0], a.name)
				if err != nil {
					return err
				}
				return printRoutes(f, cmd, rc)
			},
		})
	}
	return cmds
}

func routesCommand(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "routes",
		Short: "List routes with their operator controls",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			list, err := c.Routes(cmd.Context())
			if err != nil {
				return err
			}
			if f.output == "json" {
				return f.print(cmd.OutOrStdout(), list, nil)
			}
			return printRoutes(f, cmd, list.Routes...)
		},
	}
	cmd.AddCommand(breakerCommand(f))
	return cmd
}

func printRoutes(f *clientFlags, cmd *cobra.Command, rcs ...api.RouteControl) error {
	var v any = rcs
	if len(rcs) == 1 {
		v = rcs[0]
	}
	return f.print(cmd.OutOrStdout(), v, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "ROUTE\tSTATE\tRUN REQUESTED\tCHANGED BY\tCHANGED AT\tNEXT RUN")
		for _, rc := range rcs {
			state := "active"
			if rc.Paused {
				state = "paused"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", rc.Route, state, ts(rc.RunRequestedAt), rc.UpdatedBy, ts(&rc.UpdatedAt), ts(rc.NextRunAt))
		}
		printBreakers(w, rcs)
	})
}

func retryNowCommand(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "retry-now ID",
		Short: "Make a scheduled record due now: the next run redrives it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := f.clientForID(args[0])
			if err != nil {
				return err
			}
			r, err := c.RetryNow(cmd.Context(), id)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), r, func(w *tabwriter.Writer) {
				fmt.Fprintf(w, "record %d %s, due %s, changed by %s\n", r.ID, r.Status, ts(r.DueAt), r.ChangedBy)
			})
		},
	}
}

func runsCommand(f *clientFlags) *cobra.Command {
	var route string
	var limit int
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Recent redrive runs with the DLQ offset ranges they accounted for",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			list, err := c.Runs(cmd.Context(), route, limit)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), list, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, "RUN\tROUTE\tSTATUS\tSTARTED\tFINISHED\tPARTITION\tOFFSETS\tREDRIVEN\tSCHEDULED\tPARKED\tSKIPPED\tERRORS")
				for _, r := range list.Runs {
					head := fmt.Sprintf("%d\t%s\t%s\t%s\t%s", r.ID, r.Route, withError(string(r.Status), r.Error), ts(&r.StartedAt), ts(r.FinishedAt))
					if len(r.Ledger) == 0 {
						fmt.Fprintf(w, "%s\t-\t-\t0\t0\t0\t0\t0\n", head)
					}
					for i, e := range r.Ledger {
						if i > 0 {
							head = "\t\t\t\t"
						}
						fmt.Fprintf(w, "%s\t%s/%d\t%d-%d\t%d\t%d\t%d\t%d\t%d\n", head, e.DLQTopic, e.Partition, e.FromOffset, e.ToOffset,
							e.Redriven, e.Scheduled, e.Parked, e.Skipped, e.Errors)
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&route, "route", "", "only this route's runs")
	cmd.Flags().IntVar(&limit, "limit", 20, "runs (at most 500)")
	_ = cmd.RegisterFlagCompletionFunc("route", f.completeRoutes)
	return cmd
}

// auditFilters are the audit command's filter flags, as given.
type auditFilters struct {
	action, actor, record, job, topic, route, from, to string
}

// params are the API's parameters of the filters given; a record or job id and a time
// are checked here, as the flag they came from.
func (af *auditFilters) params() (api.ListAuditParams, error) {
	text := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	var errs []error
	id := func(flag, v string) *int64 {
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %q is not an id", flag, v))
		}
		return &n
	}
	at := func(flag, v string) *string {
		t, err := flagTime(flag, v, time.Now())
		if err != nil {
			errs = append(errs, err)
		}
		return t
	}
	p := api.ListAuditParams{Action: text(af.action), Actor: text(af.actor), RecordID: id("record", af.record),
		JobID: id("job", af.job), Topic: text(af.topic), Route: text(af.route), From: at("from", af.from), To: at("to", af.to)}
	return p, errors.Join(errs...)
}

func auditCommand(f *clientFlags) *cobra.Command {
	var before int64
	var limit int
	var af auditFilters
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "The audit log of operator actions, newest first (refused ones included)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			q, err := af.params()
			if err != nil {
				return err
			}
			q.Limit = &limit
			if before > 0 {
				q.Before = &before
			}
			list, err := c.Audit(cmd.Context(), q)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), list, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, "ID\tAT\tACTOR\tACTION\tOUTCOME\tON\tAFFECTED\tREASON")
				for _, e := range list.Entries {
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", e.ID, ts(&e.At), e.Actor, e.Action, e.Outcome,
						auditTarget(e), e.Affected, printable(truncate(e.Reason, 60)))
				}
				fmt.Fprintln(w, totalLine(list.Total, list.TotalIsEstimate, "entries"))
				if list.NextBefore != 0 {
					fmt.Fprintf(w, "next page: --before %d\n", list.NextBefore)
				}
			})
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&before, "before", 0, "list entries below this id (the next page)")
	fl.IntVar(&limit, "limit", 50, "entries (at most 500)")
	fl.StringVar(&af.action, "action", "", "only this action (discard, begin_replay, pause_route, ...)")
	fl.StringVar(&af.actor, "actor", "", "only this actor")
	fl.StringVar(&af.record, "record", "", "a record's history: the entries naming this record id")
	fl.StringVar(&af.job, "job", "", "only this job's entries")
	fl.StringVar(&af.topic, "topic", "", "only entries about records of this original topic")
	fl.StringVar(&af.route, "route", "", "only entries about this route")
	fl.StringVar(&af.from, "from", "", "entries at or after this time: "+reltime.Syntax)
	fl.StringVar(&af.to, "to", "", "entries before this time: "+reltime.Syntax)
	return cmd
}

// auditTarget names what an audit entry acted on: records, a job, a route or a filter.
func auditTarget(e api.AuditEntry) string {
	var parts []string
	switch n := len(e.RecordIDs); {
	case n == 1:
		parts = append(parts, "record "+strconv.FormatInt(e.RecordIDs[0], 10))
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d records", n))
	}
	if e.JobID != 0 {
		parts = append(parts, "job "+strconv.FormatInt(e.JobID, 10))
	}
	if e.Route != "" {
		parts = append(parts, "route "+e.Route)
	}
	if e.Filter != nil && len(e.RecordIDs) == 0 {
		parts = append(parts, "filter")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// withError is a status followed by its error, when there is one.
func withError(status, err string) string {
	if err == "" {
		return status
	}
	return status + " (" + truncate(err, 60) + ")"
}
