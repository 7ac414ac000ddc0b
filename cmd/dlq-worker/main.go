// Command dlq-worker re-drives dead-lettered Kafka records to their original topics on a
// schedule, parks those that exhausted their retries in PostgreSQL, and executes the
// replay/discard jobs operators request through dlq-admin.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/daemon"
	"github.com/dlqops/dlq/internal/housekeeping"
	"github.com/dlqops/dlq/internal/jobgauges"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/version"
)

const envPrefix = "DLQ_WORKER_"

func main() {
	var cfgPath string
	root := &cobra.Command{
		Use:           "dlq-worker",
		Short:         "Re-drive dead-lettered Kafka records and park the ones that need a human",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       workerVersion(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVarP(&cfgPath, "config", "c", "", "YAML configuration file (environment: "+envPrefix+"<KEY>)")
	load := func() (*workerconfig.Config, error) {
		var cfg workerconfig.Config
		return &cfg, daemon.LoadConfig(cfgPath, envPrefix, &cfg, &cfg.Database, &cfg.Kafka.BootstrapServers)
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
	root.AddCommand(auditCommand(load))
	root.AddCommand(doctorCommand(load))
	root.AddCommand(daemon.HealthCommand(func() (ops.HTTP, error) {
		cfg, err := load()
		if err != nil {
			return ops.HTTP{}, err
		}
		return cfg.HTTP, nil
	}))
	root.AddCommand(daemon.MigrateCommand(func() (store.Config, error) {
		cfg, err := load()
		return cfg.Database, err
	}))
	if err := root.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "dlq-worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg *workerconfig.Config) error {
	setMemory(cfg.MemoryLimitMiB) // for the life of the process
	base, err := daemon.Start(ctx, "dlq-worker", cfg.Log, cfg.Database)
	if err != nil {
		return err
	}
	defer base.Pool.Close()
	log, srv, pool := base.Log, base.Ops, base.Pool
	// librdkafka's own log lines go through zerolog too; the router stops after the last
	// handle closed (the deferred admin.Close below runs first).
	klog := kafkaclient.NewLogRouter(log)
	if err := klog.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = klog.Stop(context.Background()) }()
	admin, err := kafkaclient.NewAdmin(cfg.Kafka)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	defer admin.Close()
	srv.AddCheck("kafka", kafkaclient.MetadataCheck(admin.AdminClient))
	// A fatal route error ends the process like a signal would, then makes it exit non-zero.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := store.New(pool, store.WithLogger(log))
	groupInstance, release, err := groupInstanceID(cfg.GroupInstanceID)
	if err != nil {
		return err
	}
	defer release()
	engine, err := redrive.New(cfg.Routes, redrive.Options{
		Log: log, Store: st, Kafka: cfg.Kafka, Registry: srv.Registry, GroupInstanceID: groupInstance, ReadPath: cfg.ReadPath,
		OnFatal: func(error) { cancel() },
	})
	if err != nil {
		return err
	}
	srv.AddCheck("redrive", engine.Ready)
	if err := registerScheduleIntervals(srv.Registry, cfg.Routes); err != nil {
		return err
	}
	// Operator jobs (replay/discard requested through dlq-admin) run here too.
	host, _ := os.Hostname()
	runner, err := jobs.New(jobs.Config{
		Store: st, Kafka: cfg.Kafka, Routes: cfg.Routes, Concurrency: cfg.Jobs.Concurrency, Owner: fmt.Sprintf("%s/%d", host, os.Getpid()), Log: log, Registerer: srv.Registry,
	})
	if err != nil {
		return err
	}
	// How jobs look in PostgreSQL, read at each scrape: pending, running, stalled.
	if _, err := jobgauges.Register(srv.Registry, st, log); err != nil {
		return err
	}
	keeper, err := housekeeping.New(housekeeping.Options{
		Log: log, Store: st, Registry: srv.Registry, Interval: cfg.Retention.Interval,
		Retention: store.Retention{Records: cfg.Retention.Records, Runs: cfg.Retention.Runs, IdleRuns: cfg.Retention.IdleRuns,
			Jobs: cfg.Retention.Jobs, Audit: cfg.Retention.Audit, Ledger: cfg.Retention.Ledger},
	})
	if err != nil {
		return err
	}
	if err := daemon.Run(ctx, log, srv, cfg.HTTP.Listener(), cfg.ShutdownGrace, engine, runner, keeper); err != nil {
		return err
	}
	return engine.Err()
}

func auditCommand(load func() (*workerconfig.Config, error)) *cobra.Command {
	var topic, group string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check that every DLQ record below the group's committed offsets is on its target or in PostgreSQL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			st, err := store.Open(cmd.Context(), cfg.Database.URL)
			if err != nil {
				return err
			}
			defer st.Close()
			var opts []audit.Option
			for _, rc := range cfg.Routes {
				if rc.Group == group && rc.RedriveTo == routes.RedriveToGroupTopic {
					opts = append(opts, audit.WithGroupTopics(rc.GroupTopicTemplate))
				}
			}
			rep, err := audit.Run(cmd.Context(), cfg.Kafka, st, topic, group, opts...)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), rep)
			return rep.Err()
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "DLQ topic")
	cmd.Flags().StringVar(&group, "group", "", "the route's consumer group")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("group")
	return cmd
}

// registerScheduleIntervals exports each route's longest gap between cron ticks, so an
// alert can say "no successful run for 3 schedule periods" whatever the schedule.
func registerScheduleIntervals(reg prometheus.Registerer, rcs []routes.Config) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dlq_worker_schedule_interval_seconds",
		Help: "The longest gap between two runs of the route's cron schedule.",
	}, []string{"route"})
	for _, rc := range rcs {
		d, err := routes.Interval(rc.Schedule, time.Now())
		if err != nil {
			return fmt.Errorf("routes[%s].schedule: %w", rc.Name, err)
		}
		g.WithLabelValues(rc.Name).Set(d.Seconds())
	}
	return reg.Register(g)
}

// workerVersion adds the librdkafka linked in (and how: static musl in the image) to the build.
func workerVersion() string {
	_, rdkafka := kafka.LibraryVersion()
	return fmt.Sprintf("%s, librdkafka %s (%s)", version.String("dlq-worker"), rdkafka, kafka.LibrdkafkaLinkInfo)
}
