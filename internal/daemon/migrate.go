package daemon

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/store"
)

// MigrateTimeout bounds a migration run; concurrent starters wait on the advisory lock.
const MigrateTimeout = 5 * time.Minute

// MigrateOnStart applies pending migrations when the configuration asks for it.
func MigrateOnStart(ctx context.Context, db store.Config, log zerolog.Logger) error {
	if !db.MigrateOnStart {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, MigrateTimeout)
	defer cancel()
	if err := store.Migrate(ctx, db.URL); err != nil {
		return fmt.Errorf("database.migrate_on_start: %w", err)
	}
	log.Info().Msg("migrations applied")
	return nil
}

// MigrateCommand is the `migrate up|status` subcommand both binaries carry.
func MigrateCommand(load func() (store.Config, error)) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "Apply or list the database migrations"}
	cmd.AddCommand(&cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration (safe while other instances run or start)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := load()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), MigrateTimeout)
			defer cancel()
			if err := store.Migrate(ctx, db.URL); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "migrations applied")
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := load()
			if err != nil {
				return err
			}
			states, err := store.MigrationStatus(cmd.Context(), db.URL)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "VERSION\tNAME\tAPPLIED")
			for _, s := range states {
				at := "pending"
				if s.Applied {
					at = s.AppliedAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%d\t%s\t%s\n", s.Version, s.Name, at)
			}
			return w.Flush()
		},
	})
	return cmd
}
