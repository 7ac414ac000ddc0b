// Command dlq-worker re-drives dead-lettered Kafka records to their original topics on a
// schedule, parks those that exhausted their retries in PostgreSQL, and executes the
// replay/discard jobs operators request through dlq-admin.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/daemon"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/ops"
)

const envPrefix = "DLQ_WORKER_"

func main() {
	var cfgPath string
	root := &cobra.Command{
		Use:           "dlq-worker",
		Short:         "Re-drive dead-lettered Kafka records and park the ones that need a human",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVarP(&cfgPath, "config", "c", "", "YAML configuration file (environment: "+envPrefix+"<KEY>)")
	load := func() (*config.Worker, error) {
		var cfg config.Worker
		return &cfg, daemon.LoadConfig(cfgPath, envPrefix, &cfg, &cfg.Database, &cfg.Kafka)
	}
	root.AddCommand(&cobra.Command{
		Use:   "run",
		Short: "Run the worker until SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			return run(cmd.Context(), cfg)
		},
	})
	root.AddCommand(daemon.MigrateCommand(func() (config.Database, error) {
		cfg, err := load()
		return cfg.Database, err
	}))
	if err := root.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "dlq-worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg *config.Worker) error {
	log := daemon.Logger(cfg.Log, "dlq-worker")
	srv := ops.New(log)
	if err := daemon.MigrateOnStart(ctx, cfg.Database, log); err != nil {
		return err
	}
	pool, err := daemon.OpenPool(ctx, cfg.Database, srv)
	if err != nil {
		return err
	}
	defer pool.Close()
	admin, err := kafka.NewAdminClient(ptr(kafkaclient.AdminConfig(cfg.Kafka)))
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	defer admin.Close()
	srv.AddCheck("kafka", kafkaclient.MetadataCheck(admin))
	return daemon.Run(ctx, log, srv, cfg.HTTP.Listen, cfg.ShutdownGrace)
}

func ptr[T any](v T) *T { return &v }
