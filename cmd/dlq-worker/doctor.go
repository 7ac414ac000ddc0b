package main

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/doctor"
	"github.com/dlqops/dlq/internal/kafkaclient"
)

// doctorCommand checks the cluster's set-up of the routes' DLQ topics for mistakes the
// broker accepts silently (doctor.ShareGroupDLQs), and exits non-zero when it finds one.
func doctorCommand(load func() (*config.Worker, error)) *cobra.Command {
	var groups []string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the share-group dead-letter set-up of the routes' DLQ topics (and of --share-group groups)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			a, err := kafka.NewAdminClient(ptr(kafkaclient.AdminConfig(cfg.Kafka)))
			if err != nil {
				return fmt.Errorf("kafka: %w", err)
			}
			defer a.Close()
			var topics []string
			for _, rc := range cfg.Routes {
				topics = append(topics, rc.Topics...)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			findings, err := doctor.ShareGroupDLQs(ctx, a, topics, groups)
			if err != nil {
				return err
			}
			for _, f := range findings {
				fmt.Fprintln(cmd.OutOrStdout(), f)
			}
			if len(findings) > 0 {
				return fmt.Errorf("%d problem(s) found", len(findings))
			}
			fmt.Fprintln(cmd.OutOrStdout(), "no problem found")
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&groups, "share-group", nil, "a share group whose dead letters a route reads (repeatable)")
	return cmd
}
