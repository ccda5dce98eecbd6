package consolidate

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/mullhq/mull/engine"
	rules "github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// RunInput is the workflow run's input, readable by every step.
type RunInput struct {
	Workspace string `json:"workspace"`
	Reason    string `json:"reason"`
	// Since is the watermark the run started from; Watermark the one it
	// advances to when it finishes (the newest memory it planned over).
	Since     int64 `json:"since"`
	Watermark int64 `json:"watermark"`
	Memories  int   `json:"memories"`
	Clusters  int   `json:"clusters"`
	Chunks    int   `json:"chunks"`
	// PlannerJob is the consolidate job that started the run.
	PlannerJob int64 `json:"planner_job"`
}

// Planner works consolidate jobs.
type Planner struct {
	river.WorkerDefaults[Args]
	d Deps
}

// Work plans and starts one run, or records why not, and completes the job,
// all in one transaction.
func (p *Planner) Work(ctx context.Context, job *river.Job[Args]) error {
	d, a := p.d, job.Args
	rows, err := d.Store.ListMemories(ctx, d.Store.DB, store.MemoryFilter{Workspaces: []string{a.Workspace}, Oldest: true})
	if err != nil {
		return err
	}
	ms := memories.FromRows(rows)
	byID := make(map[int64]memory.Memory, len(ms))
	var top int64
	for _, m := range ms {
		byID[m.ID] = m
		top = max(top, m.ID)
	}
	// Cluster before taking the state's lock (on SQLite, the database's
	// write lock): it is the planner's only heavy work.
	pre, _, err := d.Store.GetConsolidateState(ctx, d.Store.DB, a.Workspace)
	if err != nil {
		return err
	}
	cand := d.candidates(ms, byID, pre.Watermark, d.Store.Now())
	client := river.ClientFromContext[*sql.Tx](ctx)
	var note string
	err = d.Store.InTx(ctx, func(tx *sql.Tx) error {
		now := d.Store.Now()
		st, err := d.Store.LockConsolidateState(ctx, tx, a.Workspace)
		if err != nil {
			return err
		}
		st.LastRunID = "" // plan sets it when it starts one
		note, err = p.plan(ctx, tx, client, job, &st, ms, cand, top, now)
		if err != nil {
			return err
		}
		st.LastJobID, st.LastNote = job.ID, note
		if err := d.Store.PutConsolidateState(ctx, tx, st); err != nil {
			return err
		}
		_, err = river.JobCompleteTx[riverdriver.Driver[*sql.Tx]](ctx, tx, job)
		return err
	})
	if err != nil {
		return fmt.Errorf("consolidate %q: %w", a.Workspace, err)
	}
	d.Logger.Info("consolidate planned", "job_id", job.ID, "workspace", a.Workspace, "reason", a.Reason, "note", note)
	return nil
}

// plan decides, under the state's lock, and starts the run when there is
// one to start; it returns the note that says what it decided.
func (p *Planner) plan(ctx context.Context, tx *sql.Tx, client *engine.Client, job *river.Job[Args], st *store.ConsolidateState,
	ms []memory.Memory, cand candidates, top int64, now time.Time) (string, error) {
	d, a := p.d, job.Args
	// The run is read, not locked: the derive step locks the run, then this
	// state; taking them here in the other order could deadlock on Postgres.
	busy, err := running(ctx, d.Store, tx, *st)
	if err != nil {
		return "", err
	}
	fresh := rules.CountNew(ms, st.Watermark)
	if skip := rules.Skip(rules.Request{Manual: a.Reason == ReasonManual, DryRun: a.DryRun, InFlight: busy, RunID: st.RunID,
		LastStarted: st.LastStartedAt, Cooldown: d.Settings.Cooldown, Now: now, New: fresh, Watermark: st.Watermark}); skip != "" {
		return skip, nil
	}
	if cand.since != st.Watermark {
		// A run finished while this planner clustered: plan again, from
		// its watermark.
		return "", fmt.Errorf("the watermark moved from %d to %d while planning; planning again", cand.since, st.Watermark)
	}
	clusters, chunks := cand.clusters, cand.chunks
	in := RunInput{Workspace: a.Workspace, Reason: a.Reason, Since: st.Watermark, Watermark: max(top, st.Watermark),
		Memories: len(ms), Clusters: len(clusters), Chunks: len(chunks), PlannerJob: job.ID}
	plan := fmt.Sprintf("%d live memories, %d new since memory %d, %d candidate clusters in %d chunks",
		len(ms), fresh, st.Watermark, len(clusters), len(chunks))
	if a.DryRun {
		return "dry run: " + plan, nil
	}
	def := workflows.Def{Name: "consolidate", Input: in}
	var after []string
	for i, c := range chunks {
		name := fmt.Sprintf("merge_%03d", i+1)
		def.Steps = append(def.Steps, workflows.StepDef{Name: name, Args: MergeArgs{Workspace: a.Workspace, Clusters: c}})
		after = append(after, name)
	}
	def.Steps = append(def.Steps, workflows.StepDef{Name: "derive", Args: DeriveArgs{Workspace: a.Workspace}, After: after})
	runID, err := d.Runner.Start(ctx, tx, client, def)
	if err != nil {
		return "", err
	}
	st.RunID, st.LastRunID, st.LastStartedAt, st.SessionsSince = runID, runID, now, 0
	return fmt.Sprintf("started run %s: %s", runID, plan), nil
}

// candidates are a planner's clusters, found among the memories newer
// than since, and packed into chunks.
type candidates struct {
	since    int64
	clusters []rules.Cluster
	chunks   [][]rules.Cluster
}

func (d Deps) candidates(ms []memory.Memory, byID map[int64]memory.Memory, since int64, now time.Time) candidates {
	clusters, chunks := rules.Candidates(ms, byID, since, d.Settings.ChunkChars, now)
	return candidates{since: since, clusters: clusters, chunks: chunks}
}
