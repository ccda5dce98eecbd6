package main

import "github.com/spf13/cobra"

// newImportCmd is a placeholder until the import commands land.
func newImportCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "import", Short: "(not yet built)", Hidden: true}
}
