package main

import (
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mullhq/mull/events"
)

// argsName is the annotation naming a command's positional arguments in
// errors ("text" for memory add); without it they are "argument N".
const argsName = "args_name"

// checkInput refuses, before any command runs, a flag value or argument
// holding NUL or invalid UTF-8 (the same bytes the HTTP API refuses): exit
// 2 naming the flag or argument, and nothing opened or stored.
func checkInput(cmd *cobra.Command, args []string) error {
	var bad error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if bad != nil {
			return
		}
		if problem := events.CheckText(f.Value.String(), 0); problem != "" {
			bad = usageErr("--%s: %s", f.Name, problem)
		}
	})
	if bad != nil {
		return bad
	}
	for i, a := range args {
		if problem := events.CheckText(a, 0); problem != "" {
			name := cmd.Annotations[argsName]
			if name == "" {
				name = "argument " + strconv.Itoa(i+1)
			}
			return usageErr("%s: %s", name, problem)
		}
	}
	return nil
}
