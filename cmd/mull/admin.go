package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
)

func newMigrateCmd(g *globals) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply River's and mull's database migrations",
		Long: `Apply every pending migration, River's first and then mull's, and print each
one. 'serve' and 'worker' do this at start; run it by hand to migrate before a
deploy, or with --dry-run to see what would change.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			db, _ := config.ParseDatabaseURL(cfg.DatabaseURL, cfg.DataDir)
			s, err := store.Open(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer s.Close()
			steps, err := s.Migrate(cmd.Context(), dryRun)
			if err != nil {
				return err
			}
			verb := "applied"
			if dryRun {
				verb = "would apply"
			}
			for _, st := range steps {
				fmt.Fprintf(g.stdout, "%s %s %03d %s\n", verb, st.Line, st.Version, st.Name)
			}
			if len(steps) == 0 {
				fmt.Fprintf(g.stdout, "%s is up to date\n", s.Where)
			} else {
				fmt.Fprintf(g.stdout, "%s %d migrations on %s\n", verb, len(steps), s.Where)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be applied and change nothing")
	return cmd
}

// version is set by the linker (-X main.version=…) for releases.
var version = ""

func newVersionCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print mull's version and its key dependencies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := map[string]string{"mull": version}
			if bi, ok := debug.ReadBuildInfo(); ok {
				info["go"] = bi.GoVersion
				if info["mull"] == "" {
					info["mull"] = bi.Main.Version
				}
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						info["commit"] = s.Value
					}
				}
				for _, d := range bi.Deps {
					switch d.Path {
					case "github.com/riverqueue/river":
						info["river"] = d.Version
					case "riverqueue.com/riverui":
						info["riverui"] = d.Version
					}
				}
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(info)
			}
			fmt.Fprintf(g.stdout, "mull %s (river %s, riverui %s, %s)\n", info["mull"], info["river"], info["riverui"], info["go"])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show the effective configuration"}
	var workspace string
	var asJSON bool
	printCmd := &cobra.Command{
		Use:   "print [--workspace W [--json]]",
		Short: "Print the effective configuration as TOML, secrets masked",
		Long: `Print the configuration mull would run with (defaults, then --config file,
then MULL_* environment, then flags), validated, with secrets masked.
With --workspace, print instead each per-workspace setting of W as it applies
now and where it comes from: env, workspace (api), workspace (file),
global (file) or default.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("workspace") {
				return printWorkspaceConfig(cmd, g, workspace, asJSON)
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			out, err := cfg.Print()
			if err != nil {
				return err
			}
			fmt.Fprint(g.stdout, out)
			return nil
		},
	}
	printCmd.Flags().StringVar(&workspace, "workspace", "", "show this workspace's per-workspace settings and their sources")
	printCmd.Flags().BoolVar(&asJSON, "json", false, "with --workspace: print JSON")
	cmd.AddCommand(printCmd)
	return cmd
}
