// Package consolidate is sleep-time consolidation as durable jobs: the
// consolidate job plans one run for a workspace (find near-duplicate
// clusters among what changed since its watermark, cheaply, with
// learn/consolidate), and starts it as a workflow whose steps are the
// merge chunks (one LLM call each, applied with the step's completion) and
// a final derive step (principles, hypotheses, prefetch; it advances the
// watermark). A crash loses at most the chunk in flight: finished chunks
// are never asked again. The consolidate_sweep job (cron, off-peak) and the
// session-end hook (N sessions since the last run) enqueue planners.
package consolidate

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	rules "github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// Why a planner was enqueued. Only a manual run skips the cooldown.
const (
	ReasonCron     = "cron"
	ReasonSessions = "sessions"
	ReasonManual   = "manual"
)

// Args are a consolidate (planner) job's arguments.
type Args struct {
	Workspace string `json:"workspace"`
	Reason    string `json:"reason"`
	// Requested makes each manual run a distinct job (the CLI sets a fresh
	// value); cron and session triggers leave it empty, so a trigger that
	// fires while one of theirs waits adds nothing.
	Requested string `json:"requested,omitempty"`
	// DryRun plans and records the plan in the workspace's note without
	// starting a run or calling the model.
	DryRun bool `json:"dry_run,omitempty"`
}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "consolidate" }

// InsertOpts: unique by args among jobs not finished yet, so two triggers
// of one workspace while a planner waits enqueue one.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

// Spec: the planner reads the library and clusters it locally; no LLM.
var Spec = engine.Spec{Queue: "default", MaxAttempts: 5, Backoff: time.Minute, Timeout: 5 * time.Minute}

// MergeArgs are one merge chunk step's args: the clusters, by memory id.
type MergeArgs struct {
	Workspace string          `json:"workspace"`
	Clusters  []rules.Cluster `json:"clusters"`
}

// Kind is stable: it is stored with every job.
func (MergeArgs) Kind() string { return "consolidate_merge" }

// MergeSpec: an LLM call per chunk, on the llm queue, retried like the retros.
var MergeSpec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 5, Backoff: 5 * time.Minute, Timeout: 10 * time.Minute}

// DeriveArgs are the derive step's args.
type DeriveArgs struct {
	Workspace string `json:"workspace"`
}

// Kind is stable: it is stored with every job.
func (DeriveArgs) Kind() string { return "consolidate_derive" }

// DeriveSpec: one LLM call, after every chunk.
var DeriveSpec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 5, Backoff: 5 * time.Minute, Timeout: 10 * time.Minute}

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

// Tokens are one step's LLM use: every call its job made, in every
// attempt, failed ones included (they are paid for too).
type Tokens struct {
	Calls int `json:"calls"`
	// Failed counts the calls that ended in an error or were lost.
	Failed     int   `json:"failed,omitempty"`
	Prompt     int64 `json:"prompt_tokens"`
	CacheHit   int64 `json:"cache_hit_tokens"`
	Completion int64 `json:"completion_tokens"`
	CostNano   int64 `json:"cost_nano_usd"`
}

func (t *Tokens) add(o Tokens) {
	t.Calls += o.Calls
	t.Failed += o.Failed
	t.Prompt += o.Prompt
	t.CacheHit += o.CacheHit
	t.Completion += o.Completion
	t.CostNano += o.CostNano
}

// jobTokens sums the LLM call records of a step's job. The job keeps its id
// across River's attempts, so a call that failed (and made the step retry)
// counts, as `mull retro run` counts a retro's; this attempt's call is
// recorded before Complete returns.
func (d Deps) jobTokens(ctx context.Context, jobID int64) (Tokens, error) {
	rows, err := d.Store.SumLLMCalls(ctx, "job", store.LLMCallFilter{JobID: jobID})
	if err != nil {
		return Tokens{}, err
	}
	var t Tokens
	for _, r := range rows {
		t.add(Tokens{Calls: int(r.Calls), Failed: int(r.Failed), Prompt: r.PromptTokens, CacheHit: r.CacheHitTokens,
			Completion: r.CompletionTokens, CostNano: r.CostNanoUSD})
	}
	return t, nil
}

// MergeOutput is a merge chunk's stored output.
type MergeOutput struct {
	Clusters int `json:"clusters"`
	// Merged clusters became one memory each; Superseded counts their
	// sources, invalidated with a link to it.
	Merged     int `json:"merged"`
	Superseded int `json:"superseded"`
	// Rejected merges failed the fidelity check (or were not valid
	// memories); their sources stay.
	Rejected int `json:"rejected"`
	// Redacted counts credentials the trust gate redacted in the merges;
	// Quarantined the rejected merges it quarantined (kept in the
	// quarantine table, never served).
	Redacted    int `json:"redacted,omitempty"`
	Quarantined int `json:"quarantined,omitempty"`
	// Stale clusters had fewer than two live members by the time the step
	// ran (a retro superseded one meanwhile).
	Stale  int    `json:"stale"`
	Tokens Tokens `json:"tokens"`
}

// Counts are what a finished run did: the derive step's output, also kept
// as the workspace's last counts.
type Counts struct {
	Workspace  string `json:"workspace"`
	Memories   int    `json:"memories"`
	Clusters   int    `json:"clusters"`
	Chunks     int    `json:"chunks"`
	Merged     int    `json:"merged"`
	Superseded int    `json:"superseded"`
	Rejected   int    `json:"rejected"`
	Stale      int    `json:"stale"`
	// Redacted and Quarantined are what the trust gate did to the run's
	// merges and derived lines (quarantined ones are kept in the
	// quarantine table, never served).
	Redacted    int `json:"redacted,omitempty"`
	Quarantined int `json:"quarantined,omitempty"`
	// DerivedRejected counts derived lines refused one by one (a NUL
	// byte, too long, quarantined…); the others were kept.
	DerivedRejected int `json:"derived_rejected,omitempty"`
	// Principles, Hypotheses and Prefetch count the derived memories
	// added; Kept the ones the model repeated; Replaced the old ones it
	// did not.
	Principles int    `json:"principles"`
	Hypotheses int    `json:"hypotheses"`
	Prefetch   int    `json:"prefetch"`
	Kept       int    `json:"kept"`
	Replaced   int    `json:"replaced"`
	Derived    bool   `json:"derived"`
	Tokens     Tokens `json:"tokens"`
}

// Settings are the consolidate config the jobs read.
type Settings struct {
	// Cooldown is the least time between two runs not asked for by hand.
	Cooldown time.Duration
	// AfterSessions: sessions ended since the last run that trigger one.
	AfterSessions int
	// ChunkChars caps one merge call's memory text.
	ChunkChars int
	// MinMemories: fewer live memories get no derived ones.
	MinMemories int
	// DeriveChars caps the derive call's memory text (consolidate.derive_chars).
	DeriveChars int
	// TriggerDelay is how long after the Nth session end its run is
	// planned, so that session's retro lands first
	// (consolidate.trigger_delay).
	TriggerDelay time.Duration
	// Schedule is consolidate.schedule, the sweep's built-in cron entry;
	// "off" (or empty) declares none.
	Schedule string
}

// SettingsFrom reads the config.
func SettingsFrom(c config.Consolidate) Settings {
	return Settings{Cooldown: c.Cooldown.D(), AfterSessions: c.AfterSessions, ChunkChars: c.ChunkChars, MinMemories: c.MinMemories,
		DeriveChars: c.DeriveChars, TriggerDelay: c.TriggerDelay.D(), Schedule: c.Schedule}
}

func (s Settings) withDefaults() Settings {
	d := SettingsFrom(config.Config{}.WithDefaults().Consolidate)
	if s.Cooldown < 0 {
		s.Cooldown = 0
	}
	if s.AfterSessions <= 0 {
		s.AfterSessions = d.AfterSessions
	}
	if s.ChunkChars <= 0 {
		s.ChunkChars = d.ChunkChars
	}
	if s.MinMemories <= 0 {
		s.MinMemories = d.MinMemories
	}
	if s.DeriveChars <= 0 {
		s.DeriveChars = d.DeriveChars
	}
	if s.TriggerDelay <= 0 {
		s.TriggerDelay = d.TriggerDelay
	}
	return s
}

// Deps are what the consolidate jobs are built from.
type Deps struct {
	Store    *store.Store
	LLM      *llm.Client
	Runner   *workflows.Runner
	Logger   *slog.Logger
	Settings Settings
}

// Register adds the planner, the two step kinds and the sweep, the
// session-end hook that counts toward the "N sessions" trigger, and the
// sweep's built-in cron entry (Settings.Schedule) unless it is off.
func Register(reg *engine.Registry, d Deps) {
	d.Settings = d.Settings.withDefaults()
	engine.Add(reg, Spec, &Planner{d: d})
	engine.Add(reg, SweepSpec, &Sweep{d: d})
	workflows.AddStep(reg, d.Runner, MergeSpec, d.merge)
	workflows.AddStep(reg, d.Runner, DeriveSpec, d.derive)
	reg.OnSessionEnded((&Hook{Store: d.Store, Settings: d.Settings}).SessionEnded)
	if s := d.Settings.Schedule; s != "" && !(config.Consolidate{Schedule: s}).Off() {
		reg.Cron("consolidate-sweep", s, SweepArgs{})
	}
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
	if busy, err := running(ctx, d.Store, tx, *st); err != nil {
		return "", err
	} else if busy {
		return fmt.Sprintf("skipped: run %s is still in flight", st.RunID), nil
	}
	if a.Reason != ReasonManual && !a.DryRun && !st.LastStartedAt.IsZero() {
		if next := st.LastStartedAt.Add(d.Settings.Cooldown); now.Before(next) {
			return fmt.Sprintf("skipped: cooldown until %s", next.Format(time.RFC3339)), nil
		}
	}
	fresh := CountNew(ms, st.Watermark)
	if fresh == 0 && a.Reason != ReasonManual {
		return fmt.Sprintf("skipped: nothing new since memory %d", st.Watermark), nil
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
	st.RunID, st.LastStartedAt, st.SessionsSince = runID, now, 0
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
	clusters, chunks := Candidates(ms, byID, since, d.Settings.ChunkChars, now)
	return candidates{since: since, clusters: clusters, chunks: chunks}
}

// Candidates are the clusters a run would merge among a library's live
// memories ms (byID indexes them) newer than since, packed into chunks of
// at most chunkChars: what the planner starts a run with, and what
// `consolidate run --dry-run` shows.
func Candidates(ms []memory.Memory, byID map[int64]memory.Memory, since int64, chunkChars int, now time.Time) ([]rules.Cluster, [][]rules.Cluster) {
	// Derived memories are replaced as a set by the derive step, not merged.
	base := slices.DeleteFunc(slices.Clone(ms), func(m memory.Memory) bool { return m.Kind.SleepTime() })
	clusters := rules.Clusters(base, since, now, rules.ClusterOptions{})
	return clusters, rules.Chunks(clusters, byID, chunkChars)
}

// CountNew counts the memories of ms newer than since that are news to a
// run: what consolidation wrote itself (merged and derived memories) is
// not, so a library whose only new rows are last night's output is not
// consolidated again.
func CountNew(ms []memory.Memory, since int64) int {
	n := 0
	for _, m := range ms {
		if m.ID > since && m.Origin != memory.OriginSleep {
			n++
		}
	}
	return n
}

// merge asks the model to merge one chunk's clusters and applies what
// passes the fidelity check with the step's completion.
func (d Deps) merge(ctx context.Context, step *workflows.Step[MergeArgs]) (workflows.Result, error) {
	a := step.Args
	var ids []int64
	for _, c := range a.Clusters {
		ids = append(ids, c.IDs...)
	}
	rows, err := d.Store.MemoriesByID(ctx, d.Store.DB, ids)
	if err != nil {
		return workflows.Result{}, err
	}
	now := d.Store.Now()
	byID := map[int64]memory.Memory{}
	for _, m := range memories.FromRows(rows) {
		if m.ValidAt(now) && !m.Quarantined && m.Workspace == a.Workspace {
			byID[m.ID] = m
		}
	}
	var live []rules.Cluster
	out := MergeOutput{Clusters: len(a.Clusters)}
	for _, c := range a.Clusters {
		var keep []int64
		for _, id := range c.IDs {
			if _, ok := byID[id]; ok {
				keep = append(keep, id)
			}
		}
		if len(keep) < 2 {
			out.Stale++
			continue
		}
		live = append(live, rules.Cluster{Kind: c.Kind, IDs: keep})
	}
	if len(live) == 0 {
		// An earlier attempt may have called the model before its
		// clusters went stale.
		out.Tokens, err = d.jobTokens(ctx, step.Job.ID)
		return workflows.Result{Output: out}, err
	}
	reply, _, err := llm.CompleteJSON[rules.MergeReply](ctx, d.LLM, llm.Call{
		Kind: MergeArgs{}.Kind(), JobID: step.Job.ID, Workspace: a.Workspace,
		Messages: []llm.Message{llm.System(rules.MergePrompt), llm.User(rules.MergeInput(live, byID))},
	})
	if err == nil {
		if verr := rules.MergeOutput(reply).Validate(len(live)); verr != nil {
			err = &llm.Error{Class: llm.Invalid, Reason: "schema", Err: fmt.Errorf("output fails validation: %w", verr)}
		}
	}
	if err != nil {
		return workflows.Result{}, llm.JobResult(ctx, d.Logger, step.Job, err)
	}
	if out.Tokens, err = d.jobTokens(ctx, step.Job.ID); err != nil {
		return workflows.Result{}, err
	}
	plan := rules.PlanMerges(rules.MergeOutput(reply), live, byID, rules.Source{Workspace: a.Workspace, RunID: step.RunID, JobID: step.Job.ID}, now)
	out.Rejected, out.Quarantined = len(plan.Rejected), len(plan.Quarantined)
	for _, m := range plan.Merged {
		out.Redacted += m.Redacted
	}
	for _, r := range plan.Rejected {
		d.Logger.Info("consolidate merge rejected", "run_id", step.RunID, "step", step.Name, "ids", r.Cluster.IDs,
			"missing", r.Missing, "error", r.Err)
	}
	out.Merged = len(plan.Merged)
	for _, m := range plan.Merged {
		out.Superseded += len(m.Supersedes)
	}
	apply := func(ctx context.Context, tx *sql.Tx) error {
		// Under the library's lock, as the retros and remember write, so
		// a digest publication waits for the merge to commit.
		if err := d.Store.LockLibrary(ctx, tx, a.Workspace); err != nil {
			return err
		}
		if err := hold(ctx, d.Store, tx, "merge", step.Job.ID, plan.Quarantined, now); err != nil {
			return err
		}
		for _, m := range plan.Merged {
			ok, err := sourcesLive(ctx, d.Store, tx, m.Supersedes)
			if err != nil {
				return err
			}
			if !ok {
				// A retro invalidated a source since the step read it: roll
				// back, and the retry reads the library again.
				return fmt.Errorf("a source of merged memories %v changed while the merge ran; retrying", m.Supersedes)
			}
			id, err := d.Store.InsertMemory(ctx, tx, memories.ToRow(m.New))
			if err != nil {
				return err
			}
			for _, old := range m.Supersedes {
				if _, err := d.Store.InvalidateMemory(ctx, tx, old, now, rules.InvalidReason, id); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return workflows.Result{Output: out, Apply: apply}, nil
}

// hold keeps what the trust gate quarantined in a consolidation's answer
// in the quarantine table, never served; kind is the record's kind, or ""
// for each memory's own (principle, hypothesis, prefetch).
func hold(ctx context.Context, s *store.Store, tx *sql.Tx, kind string, jobID int64, ms []memory.Memory, now time.Time) error {
	for _, m := range ms {
		k := kind
		if k == "" {
			k = string(m.Kind)
		}
		if err := s.InsertQuarantined(ctx, tx, store.Quarantined{Workspace: m.Workspace, Kind: k, Text: m.Text,
			Reason: m.QuarantineReason, JobID: jobID, RecordedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// sourcesLive reports whether every memory is still valid inside tx: a
// merge applies only over the rows it read.
func sourcesLive(ctx context.Context, s *store.Store, tx *sql.Tx, ids []int64) (bool, error) {
	rows, err := s.MemoriesByID(ctx, tx, ids)
	if err != nil {
		return false, err
	}
	if len(rows) != len(ids) {
		return false, nil
	}
	for _, r := range rows {
		if !r.InvalidAt.IsZero() || r.Quarantined {
			return false, nil
		}
	}
	return true, nil
}

// derive sums the chunks, asks for principles, hypotheses and prefetch
// when the library is big enough, and finishes the run: the derived
// memories, the watermark and the counts commit with the step.
func (d Deps) derive(ctx context.Context, step *workflows.Step[DeriveArgs]) (workflows.Result, error) {
	var in RunInput
	if err := step.Input(&in); err != nil {
		return workflows.Result{}, err
	}
	c := Counts{Workspace: in.Workspace, Memories: in.Memories, Clusters: in.Clusters, Chunks: in.Chunks}
	for _, dep := range step.Deps() {
		var o MergeOutput
		if err := step.Output(dep, &o); err != nil {
			return workflows.Result{}, err
		}
		c.Merged += o.Merged
		c.Superseded += o.Superseded
		c.Rejected += o.Rejected
		c.Redacted += o.Redacted
		c.Quarantined += o.Quarantined
		c.Stale += o.Stale
		c.Tokens.add(o.Tokens)
	}
	rows, err := d.Store.ListMemories(ctx, d.Store.DB, store.MemoryFilter{Workspaces: []string{in.Workspace}, Oldest: true})
	if err != nil {
		return workflows.Result{}, err
	}
	ms := memories.FromRows(rows)
	now := d.Store.Now()
	var plan rules.DeriveChanges
	if n := countBase(ms); n >= d.Settings.MinMemories {
		out, _, err := llm.CompleteJSON[rules.DeriveOutput](ctx, d.LLM, llm.Call{
			Kind: DeriveArgs{}.Kind(), JobID: step.Job.ID, Workspace: in.Workspace,
			Messages: []llm.Message{llm.System(rules.DerivePrompt), llm.User(rules.DeriveInput(ms, now, d.Settings.DeriveChars))},
		})
		if err != nil {
			return workflows.Result{}, llm.JobResult(ctx, d.Logger, step.Job, err)
		}
		c.Derived = true
		plan = rules.PlanDerive(out, ms, rules.Source{Workspace: in.Workspace, RunID: step.RunID, JobID: step.Job.ID}, now)
		for _, m := range plan.Add {
			switch m.Kind {
			case memory.Principle:
				c.Principles++
			case memory.Hypothesis:
				c.Hypotheses++
			case memory.Prefetch:
				c.Prefetch++
			}
		}
		c.Kept, c.Replaced = len(plan.Keep), len(plan.Invalidate)
		c.Redacted += plan.Redacted
		c.Quarantined += len(plan.Quarantined)
		c.DerivedRejected = len(plan.Rejected)
		for _, e := range plan.Rejected {
			d.Logger.Info("consolidate derived entry rejected", "run_id", step.RunID, "error", e)
		}
	}
	// Every call of this step's job, a failed derive attempt's too; a
	// library too small to derive from made none.
	own, err := d.jobTokens(ctx, step.Job.ID)
	if err != nil {
		return workflows.Result{}, err
	}
	c.Tokens.add(own)
	counts, _ := json.Marshal(c) // plain struct
	apply := func(ctx context.Context, tx *sql.Tx) error {
		// The library's lock first, then the state's row: the order no
		// other writer reverses.
		if err := d.Store.LockLibrary(ctx, tx, in.Workspace); err != nil {
			return err
		}
		if err := hold(ctx, d.Store, tx, "", step.Job.ID, plan.Quarantined, now); err != nil {
			return err
		}
		for _, m := range plan.Add {
			if _, err := d.Store.InsertMemory(ctx, tx, memories.ToRow(m)); err != nil {
				return err
			}
		}
		for _, id := range plan.Invalidate {
			if _, err := d.Store.InvalidateMemory(ctx, tx, id, now, rules.ReplaceReason, 0); err != nil {
				return err
			}
		}
		st, err := d.Store.LockConsolidateState(ctx, tx, in.Workspace)
		if err != nil {
			return err
		}
		st.Watermark = max(st.Watermark, in.Watermark)
		if st.RunID == step.RunID {
			st.RunID = ""
		}
		st.LastFinishedAt, st.LastCounts = now, string(counts)
		st.LastNote = fmt.Sprintf("finished run %s: merged %d clusters (%d memories superseded), rejected %d; derived %d principles, %d hypotheses, %d prefetch",
			step.RunID, c.Merged, c.Superseded, c.Rejected, c.Principles, c.Hypotheses, c.Prefetch)
		return d.Store.PutConsolidateState(ctx, tx, st)
	}
	d.Logger.Info("consolidate run finished", "run_id", step.RunID, "workspace", in.Workspace, "merged", c.Merged,
		"superseded", c.Superseded, "rejected", c.Rejected, "redacted", c.Redacted, "quarantined", c.Quarantined, "principles", c.Principles, "hypotheses", c.Hypotheses,
		"prefetch", c.Prefetch, "calls", c.Tokens.Calls, "failed_calls", c.Tokens.Failed, "prompt_tokens", c.Tokens.Prompt, "completion_tokens", c.Tokens.Completion)
	return workflows.Result{Output: c, Apply: apply}, nil
}

// countBase counts the live memories derived ones are drawn from.
func countBase(ms []memory.Memory) int {
	n := 0
	for _, m := range ms {
		if !m.Kind.SleepTime() && !m.Quarantined && m.InvalidAt.IsZero() {
			n++
		}
	}
	return n
}
