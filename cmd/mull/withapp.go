package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/learn/memory"
)

// withApp is a command's RunE that opens the app to manage the store, runs
// fn with it and closes it: the opening every store-reading command shares.
func withApp(g *globals, fn func(ctx context.Context, a *app, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a, err := g.open(cmd.Context(), manage)
		if err != nil {
			return err
		}
		defer a.close()
		return fn(cmd.Context(), a, args)
	}
}

// flagError makes a *memory.FieldError a usage error (exit 2) naming its
// flag; any other error, or nil, is returned as it is.
func flagError(err error) error {
	var fe *memory.FieldError
	if errors.As(err, &fe) {
		return usageErr("--%s", fe)
	}
	return err
}
