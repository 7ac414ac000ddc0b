// Command dlq-admin serves the authenticated REST API and the operator console (/ui/)
// operators use to review parked dead-letter records and to replay or discard them.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	specfile "github.com/dlqops/dlq/api"
	"github.com/dlqops/dlq/cmd/dlq-admin/adminconfig"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/console"
	"github.com/dlqops/dlq/internal/daemon"
	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/version"
)

const envPrefix = "DLQ_ADMIN_"

func main() {
	if err := newRoot(&clientFlags{}).ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "dlq-admin:", err)
		os.Exit(1)
	}
}

// newRoot is the command tree; cf holds the API client settings of the client commands.
func newRoot(cf *clientFlags) *cobra.Command {
	var cfgPath string
	root := &cobra.Command{
		Use:           "dlq-admin",
		Short:         "Review, replay and discard parked dead-letter records",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String("dlq-admin"),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVarP(&cfgPath, "config", "c", "", "YAML configuration file (environment: "+envPrefix+"<KEY>)")
	load := func() (*adminconfig.Config, error) {
		var cfg adminconfig.Config
		return &cfg, daemon.LoadConfig(cfgPath, envPrefix, &cfg, &cfg.Database, nil)
	}
	root.AddCommand(&cobra.Command{
		Use:   "serve",
		Short: "Serve the admin API until SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			return serve(cmd.Context(), cfg)
		},
	})
	clientCommands(root, cf)
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
	return root
}

func serve(ctx context.Context, cfg *adminconfig.Config) error {
	base, err := daemon.Start(ctx, "dlq-admin", cfg.Log, cfg.Database)
	if err != nil {
		return err
	}
	defer base.Pool.Close()
	log, srv, pool := base.Log, base.Ops, base.Pool
	authn, err := auth.New(cfg.Tokens, auth.AllowDevTokens(cfg.AllowDevTokens))
	if err != nil {
		return err
	}
	masker, err := masking.New(cfg.Masking)
	if err != nil {
		return err
	}
	registry, err := schemas.New(cfg.SchemaRegistry, srv.Registry)
	if err != nil {
		return err
	}
	handler, err := api.New(api.Config{
		Store: store.New(pool, store.WithLogger(log)), Auth: authn, ReplayTopics: cfg.ReplayTopics,
		MaxBodyBytes: cfg.MaxBodyBytes, Limits: cfg.Limits, Log: log, Registerer: srv.Registry, Masking: masker, Schemas: registry,
	})
	if err != nil {
		return err
	}
	srv.Mux.Handle("/v1/", handler)
	ui, err := console.New(console.Config{API: handler, Auth: authn, Audit: handler, Spec: specfile.OpenAPI,
		ReplayTopics: cfg.ReplayTopics, MaxFormBytes: 3 * cfg.MaxBodyBytes, PublicURL: cfg.PublicURL, Registerer: srv.Registry, Log: log})
	if err != nil {
		return err
	}
	srv.Mux.Handle("/ui/", ui)
	srv.Mux.Handle("GET /{$}", ui)
	defer handler.Close() // the folded refusals' audit rows
	return daemon.Run(ctx, log, srv, cfg.HTTP.Listener(), cfg.ShutdownGrace)
}
