package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/wsconfig"
)

// newWorkspacesCmd is `mull workspaces config set|unset`: the admin
// route's per-workspace settings, through the same service.
func newWorkspacesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "workspaces", Short: "Per-workspace settings (scope, budget, digest quotas, retro, reflection, ledger mode)"}
	cfg := &cobra.Command{Use: "config", Short: "Show, set and clear a workspace's own settings"}
	cfg.AddCommand(newWorkspaceShowCmd(g), newWorkspaceSetCmd(g), newWorkspaceUnsetCmd(g))
	cmd.AddCommand(cfg)
	return cmd
}

func newWorkspaceShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show WORKSPACE [--json]",
		Short: "Show every effective setting of a workspace and where it comes from",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return printWorkspaceConfig(cmd, g, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newWorkspaceSetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "set WORKSPACE KEY=VALUE...",
		Short: "Set a workspace's own settings (as PUT /v1/admin/workspaces/{ws}/config)",
		Long: `Set per-workspace settings, all or nothing, for every running mull from the
workspace's next digest or job: scope (workspace|global|both), budget (daily
tokens, 0 no limit), retro and reflection (true|false), ledger.mode
(off|warn|block), digest.quotas.<section> (characters). They win over the
config file's [workspaces."<path>"] table; MULL_MEMORY_SCOPE and
MULL_LEDGER_MODE still win over them.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes := map[string]*string{}
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return usageErr("%q: want KEY=VALUE", kv)
				}
				changes[k] = &v
			}
			return changeWorkspace(cmd, g, args[0], changes)
		},
	}
}

func newWorkspaceUnsetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unset WORKSPACE KEY...",
		Short: "Clear a workspace's settings set through the API or the CLI (the file and global values show through)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes := map[string]*string{}
			for _, k := range args[1:] {
				changes[k] = nil
			}
			return changeWorkspace(cmd, g, args[0], changes)
		},
	}
}

func changeWorkspace(cmd *cobra.Command, g *globals, ws string, changes map[string]*string) error {
	a, err := g.open(cmd.Context(), manage)
	if err != nil {
		return err
	}
	defer a.close()
	e, err := a.workspaces.Set(cmd.Context(), ws, changes, wsconfig.ByCLI)
	if err != nil {
		return usageErr("%v", err)
	}
	return writeSettings(g, e, a.workspaces, false)
}

func printWorkspaceConfig(cmd *cobra.Command, g *globals, ws string, asJSON bool) error {
	if err := wsconfig.CheckWorkspace(ws); err != nil {
		return usageErr("%v", err)
	}
	a, err := g.open(cmd.Context(), manage)
	if err != nil {
		return err
	}
	defer a.close()
	return writeSettings(g, a.workspaces.Effective(ws), a.workspaces, asJSON)
}

func writeSettings(g *globals, e config.Effective, svc *wsconfig.Service, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"workspace": e.Workspace, "settings": e.Settings, "config_file": svc.ConfigFile(), "how": svc.How(e.Workspace)})
	}
	fmt.Fprintf(g.stdout, "workspace %s\n", e.Workspace)
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, s := range e.Settings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, s.Value, s.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(g.stdout, svc.How(e.Workspace))
	return nil
}
