package main

import (
	"context"
	"fmt"
	"strings"
	"time"

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
			a, err := kafkaclient.NewAdmin(cfg.Kafka)
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
			// share.version is read over a raw connection, which only a PLAINTEXT
			// listener allows (confluent-kafka-go does not expose feature levels).
			var features func(context.Context) (map[string]int16, error)
			if proto := strings.ToLower(cfg.Kafka.Extra["security.protocol"]); proto == "" || proto == "plaintext" {
				addr := strings.TrimSpace(strings.Split(cfg.Kafka.BootstrapServers, ",")[0])
				features = func(ctx context.Context) (map[string]int16, error) { return doctor.FinalizedFeatures(ctx, addr) }
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), "share.version not checked over "+proto+": run kafka-features.sh describe")
			}
			findings, err := doctor.ShareGroupDLQs(ctx, a.AdminClient, topics, groups, features)
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
