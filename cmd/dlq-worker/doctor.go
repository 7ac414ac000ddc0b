package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/doctor"
	"github.com/dlqops/dlq/internal/kafkaclient"
)

// doctorTimeout bounds each of the doctor's network checks by default: an unreachable
// broker or database is a finding after this long, not a hang.
const doctorTimeout = 10 * time.Second

// doctorCommand checks what the worker needs before it can redrive anything (doctor.Run):
// a valid configuration, Kafka and PostgreSQL reachable, migrations applied, the routes'
// topics, and the share-group DLQ set-up the broker accepts silently. It prints one line
// per problem and per note, and exits non-zero on a problem, so that it can gate CI.
func doctorCommand(load func() (*workerconfig.Config, error)) *cobra.Command {
	var groups []string
	var timeout time.Duration
	var verbose bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, Kafka, PostgreSQL, the routes' topics and the share-group DLQ set-up",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			cfg, err := load()
			if err != nil {
				fmt.Fprintln(out, "configuration:", err)
				return fmt.Errorf("1 problem(s) found")
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout: must be positive, got %s", timeout)
			}
			// librdkafka's own lines (a refused connection, ...) go through zerolog, to
			// stderr with --verbose: the findings say what failed.
			var w io.Writer = io.Discard
			if verbose {
				w = cmd.ErrOrStderr()
			}
			klog := kafkaclient.NewLogRouter(zerolog.New(w).With().Timestamp().Logger())
			if err := klog.Start(cmd.Context()); err != nil {
				return err
			}
			defer func() { _ = klog.Stop(context.Background()) }()
			rep := doctor.Run(cmd.Context(), doctor.Options{Kafka: cfg.Kafka, Routes: cfg.Routes, Database: cfg.Database, ShareGroups: groups, Timeout: timeout})
			for _, f := range rep.Problems {
				fmt.Fprintln(out, f)
			}
			for _, f := range rep.Notes {
				fmt.Fprintln(out, "note:", f)
			}
			if len(rep.Problems) > 0 {
				return fmt.Errorf("%d problem(s) found", len(rep.Problems))
			}
			fmt.Fprintln(out, "no problem found")
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&groups, "share-group", nil, "a share group whose dead letters a route reads (repeatable)")
	cmd.Flags().DurationVar(&timeout, "timeout", doctorTimeout, "how long each Kafka or PostgreSQL check may take")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "also write librdkafka's own log lines to stderr")
	return cmd
}
