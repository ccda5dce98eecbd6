package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/spf13/cobra"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/jobs/llmprobe"
	"github.com/mullhq/mull/jobs/probe"
)

func newProbeCmd(g *globals) *cobra.Command {
	var fail, wait, withLLM bool
	var timeout time.Duration
	var note, prompt, workspace string
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Enqueue a probe job to check the pipeline end to end",
		Long: `Enqueue a probe job. It succeeds; with --fail it fails on purpose on both of
its 2 attempts (1s apart) and lands in the dead letters, so 'mull dlq list',
'mull dlq retry' and alerts can be checked end to end.

With --llm, enqueue an llm_probe instead: one small JSON-mode call to the model
through the whole path (budget reservation, DeepSeek, usage and cost, the call
record, error mapping). 'mull llm calls' shows its record.

With --wait, follow the job until it finishes and print how it ended and how
long it took. A worker ('mull serve' or 'mull worker') must be running on the
same database.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			start := time.Now()
			var args river.JobArgs = probe.Args{Fail: fail, Note: note}
			if withLLM {
				if fail {
					return usageErr("--fail and --llm do not go together; script a fault with 'mull fake-deepseek --script'")
				}
				args = llmprobe.Args{Prompt: prompt, Workspace: workspace}
			}
			res, err := a.client.Insert(cmd.Context(), args, nil)
			if err != nil {
				return fmt.Errorf("enqueue probe: %w", err)
			}
			fmt.Fprintf(g.stdout, "enqueued %s job %d (fail=%t, max attempts %d)\n", res.Job.Kind, res.Job.ID, fail, res.Job.MaxAttempts)
			if !wait {
				return nil
			}
			job, err := waitFinal(cmd.Context(), a.client, res.Job.ID, timeout)
			if err != nil {
				return err
			}
			took := time.Since(start).Round(time.Millisecond)
			switch job.State {
			case rivertype.JobStateCompleted:
				fmt.Fprintf(g.stdout, "%s job %d completed at %s in %s (attempt %d)\n", job.Kind, job.ID,
					job.FinalizedAt.UTC().Format(time.RFC3339), took, job.Attempt)
				return nil
			default:
				last := ""
				if n := len(job.Errors); n > 0 {
					last = job.Errors[n-1].Error
				}
				fmt.Fprintf(g.stdout, "%s job %d %s after %d attempts in %s: %s\n", job.Kind, job.ID, job.State, job.Attempt, took, last)
				if fail {
					return nil // it was asked to fail
				}
				return &exitError{code: 1, err: fmt.Errorf("probe job %d did not complete", job.ID)}
			}
		},
	}
	f := cmd.Flags()
	f.BoolVar(&fail, "fail", false, "fail on purpose, to exercise retries and the dead letters")
	f.BoolVar(&wait, "wait", false, "wait until the job finishes and report")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "how long --wait waits")
	f.StringVar(&note, "note", "", "free text stored in the job's args")
	f.BoolVar(&withLLM, "llm", false, "probe the LLM path instead (an llm_probe job)")
	f.StringVar(&prompt, "prompt", "ping from mull probe --llm", "with --llm: the text the model echoes")
	f.StringVar(&workspace, "workspace", "", "with --llm: charge the call to this workspace's budget")
	return cmd
}

// waitFinal polls a job until it is completed, cancelled or discarded. The
// CLI is another process than the workers, so it polls instead of subscribing.
func waitFinal(ctx context.Context, c *engine.Client, id int64, timeout time.Duration) (*rivertype.JobRow, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		job, err := c.JobGet(ctx, id)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("follow job %d: %w", id, err)
		}
		if job != nil && job.FinalizedAt != nil {
			return job, nil
		}
		select {
		case <-ctx.Done():
			state := "unknown"
			if job != nil {
				state = string(job.State)
			}
			return nil, &exitError{code: 1, err: fmt.Errorf(
				"job %d still %s after %s: is 'mull serve' or 'mull worker' running on this database?", id, state, timeout)}
		case <-tick.C:
		}
	}
}
