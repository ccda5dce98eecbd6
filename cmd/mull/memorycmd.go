package main

import "github.com/spf13/cobra"

// newMemoryCmd is a placeholder until the memory commands land.
func newMemoryCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "memory", Short: "(not yet built)", Hidden: true}
}
