package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// completeWords completes a flag from a fixed list (statuses, reasons); comma-separated
// lists complete their last element.
func completeWords[T ~string](words []T) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		prefix := ""
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			prefix = toComplete[:i+1]
		}
		var out []string
		for _, w := range words {
			if strings.HasPrefix(prefix+string(w), toComplete) {
				out = append(out, prefix+string(w))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRoutes asks the server for the route names; without a token or a server it
// completes nothing rather than fail the shell.
func (f *clientFlags) completeRoutes(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp // pause/resume/run take one route
	}
	c, err := f.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	list, err := c.Routes(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, rc := range list.Routes {
		if strings.HasPrefix(rc.Route, toComplete) {
			out = append(out, rc.Route)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
