package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/api"
)

// breakerCommand is `routes breaker ROUTE open|closed|auto --reason ...`.
func breakerCommand(f *clientFlags) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "breaker ROUTE open|closed|auto",
		Short: "Force a route's breaker open (redrive nothing, records wait as scheduled) or closed (redrive whatever comes back), or give it back to the automatic breaker",
		Args:  cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			switch len(args) {
			case 0:
				return f.completeRoutes(cmd, args, toComplete)
			case 1:
				return []string{"open", "closed", "auto"}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			mode := api.BreakerRequestMode(args[1])
			if !mode.Valid() {
				return fmt.Errorf("breaker mode %q: open, closed or auto", args[1])
			}
			if strings.TrimSpace(reason) == "" {
				return fmt.Errorf("--reason is required: the audit log keeps it")
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			rc, err := c.RouteBreaker(cmd.Context(), args[0], mode, reason)
			if err != nil {
				return err
			}
			return printRoutes(f, cmd, rc)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; kept in the audit log and shown on the console's banner)")
	return cmd
}

// printBreakers follows the routes table with a line per route whose breaker is not
// closed or is forced: its state, since when, the share that came back, the override.
func printBreakers(w *tabwriter.Writer, rcs []api.RouteControl) {
	for _, rc := range rcs {
		state := "not reported by a worker yet"
		if rc.Breaker != nil {
			state = string(rc.Breaker.State)
		}
		if rc.BreakerOverride == "" && (rc.Breaker == nil || state == "closed") {
			continue
		}
		line := fmt.Sprintf("breaker of %s: %s", printable(rc.Route), state)
		if b := rc.Breaker; b != nil {
			line += fmt.Sprintf(" since %s, %.0f%% of what it redrove came back (reported by %s)", ts(&b.Since), 100*b.ReturnedRatio, printable(b.ReportedBy))
		}
		if rc.BreakerOverride != "" {
			line += fmt.Sprintf("; forced %s by an operator: %s", rc.BreakerOverride, printable(rc.BreakerOverrideReason))
		}
		fmt.Fprintln(w, line)
	}
}
