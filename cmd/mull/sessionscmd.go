package main

import "github.com/spf13/cobra"

// newSessionsCmd is a placeholder until the sessions commands land.
func newSessionsCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "sessions", Short: "(not yet built)", Hidden: true}
}
