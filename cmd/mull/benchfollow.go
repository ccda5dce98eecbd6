package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mullhq/mull/benches"
)

// runFollowOpts tune followBenchRun. Zero fields take their defaults.
type runFollowOpts struct {
	Timeout   time.Duration
	Interval  time.Duration
	HintAfter time.Duration
}

// benchProgress is what a progress line reports; a line is printed when it
// changes.
type benchProgress struct {
	status            string
	done, failed, all int
	tokens            int64
	costMicro         int64
	decided           bool
}

func progressOf(r benches.Run) benchProgress {
	return benchProgress{status: r.Status, done: r.Done, failed: r.Failed, all: r.Total, tokens: r.Tokens,
		costMicro: int64(r.CostUSD * 1e6), decided: r.Decision != nil}
}

// ProgressLine is one --wait line: "cells 5/12 done, 1 failed, 8200
// tokens, $0.0031".
func ProgressLine(r benches.Run) string {
	return fmt.Sprintf("cells %d/%d done, %d failed, %d tokens, $%.4f", r.Done, r.Total, r.Failed, r.Tokens, r.CostUSD)
}

// followBenchRun reads a run until it is decided, failed or cancelled and
// returns it, printing a progress line to w whenever its cells, tokens or
// cost move. The CLI is another process than the workers, so it polls the
// run (as followJob polls a job). When no cell is done within HintAfter it
// says, once, that no worker may be running. When the timeout passes or
// ctx ends first it returns an *exitError (status 1): the run goes on.
func followBenchRun(ctx context.Context, a *app, id string, w io.Writer, o runFollowOpts) (benches.Run, error) {
	o.Interval = cmp.Or(o.Interval, 250*time.Millisecond)
	o.HintAfter = cmp.Or(o.HintAfter, 15*time.Second)
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	hint := time.NewTimer(o.HintAfter)
	defer hint.Stop()
	var last *benchProgress
	for {
		run, err := a.bench.Run(ctx, id)
		switch {
		case err != nil && ctx.Err() == nil:
			return run, benchErr(fmt.Errorf("follow run %s: %w", id, err))
		case err == nil:
			p := progressOf(run)
			if last == nil || *last != p {
				fmt.Fprintln(w, ProgressLine(run))
				last = &p
			}
			if run.Status != "running" {
				return run, nil
			}
		}
		select {
		case <-ctx.Done():
			why := "interrupted"
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = "after " + o.Timeout.String()
			}
			return run, &exitError{code: 1, err: fmt.Errorf("stopped following run %s %s: it goes on; 'mull bench show %s' shows it", id, why, id)}
		case <-hint.C:
			if last != nil && last.done == 0 {
				fmt.Fprintln(w, "no cell is done yet; is `mull serve` or `mull worker` running against this database?")
			}
		case <-tick.C:
		}
	}
}
