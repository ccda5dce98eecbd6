package main

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/mullhq/mull/dshimport"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/jobs"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
)

// importStdin is where --learn reads its answer; stdinIsTerminal says
// whether a person can give one. Tests replace both.
var (
	importStdin     io.Reader = os.Stdin
	stdinIsTerminal           = func() bool { return isatty.IsTerminal(os.Stdin.Fd()) || isatty.IsCygwinTerminal(os.Stdin.Fd()) }
)

func newImportCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import sessions from agent logs",
	}
	cmd.AddCommand(newImportDSHCmd(g))
	return cmd
}

func newImportDSHCmd(g *globals) *cobra.Command {
	var home string
	var asJSON, dryRun, learn, yes bool
	cmd := &cobra.Command{
		Use:   "dsh [--dsh-home DIR]",
		Short: "Import DeepSeek Harness session logs",
		Long: `Read DSH's session logs (sessions/**/session.jsonl and session.jsonl.zstd under
the DSH home, read-only) and store their events as if the bridge plugin had
sent them: messages, tool results, turn ends, errors, compactions, feedback.

mull remembers how far it read each file, so running it again imports only
what is new, and events the plugin already pushed are not stored twice.

What cannot be imported is said, with its file and byte offset:
  - a half-written last line or zstd frame is "waiting" (DSH is still
    writing it) only while the file changed within import.settle (10s);
    after that the log is cut short and its import "incomplete";
  - a corrupt zstd frame is an error; reading resumes at the next frame,
    so the rest of the session is imported, and its import is "incomplete";
  - a corrupt line stops that file (everything before it is imported).
Every run lists the incomplete imports again, until the file parses, and
"mull sessions show" says "import: incomplete (reason)". Exit status: 0
when everything was imported (waiting files included), 1 when any file
was not read whole (the rest of the home is still imported).

An import stores history only: it starts no retro, no error retro and no
consolidation, and the sessions it brought are not ended by the idle sweep
with a retro either (see learn.max_session_age). --learn opts in: after the
import it prints how many sessions it brought and the most their retros
would cost at today's prices (each retro's prompt estimate plus its
max_tokens), asks [y/N] on the terminal, then enqueues one retro per
imported session (primary sessions only). --yes skips the question;
without a terminal, --learn needs --yes. A session whose log DSH is still
writing gets no retro yet; one whose import is incomplete gets a retro that
is told so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if learn && dryRun {
				return usageErr("--learn and --dry-run do not go together: a dry run stores no session to learn from")
			}
			if learn && !yes && !stdinIsTerminal() {
				return usageErr("--learn asks for confirmation on a terminal and there is none; add --yes to enqueue the retros without asking")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			im := &dshimport.Importer{
				Home: cmp.Or(home, a.cfg.DSH.Home), Store: a.store, DryRun: dryRun, Settle: a.cfg.Import.Settle.D(),
				Logger: a.log.With("component", "dsh_import"), Progress: progressPrinter(g),
				// One run, often a whole home's history: refresh the
				// planner's statistics whenever it stored anything.
				AnalyzeAfter: 1,
			}
			var imported *sessionSet
			if !dryRun {
				if im.Ingester, err = importIngester(a); err != nil {
					return err
				}
				if learn {
					imported = &sessionSet{}
					im.Ingester = imported.wrap(a)
				}
			}
			sum, err := im.Scan(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				err = printJSON(g, struct {
					Home   string `json:"home"`
					DryRun bool   `json:"dry_run"`
					dshimport.Summary
				}{im.Home, dryRun, sum})
			} else {
				printImportSummary(g, im.Home, sum, dryRun)
			}
			if err == nil && learn {
				err = learnImported(cmd.Context(), g, a, imported.ids(), yes)
			}
			if n := notWhole(sum); err == nil && n > 0 {
				// 1, not 0: a script must see that history is missing, and
				// these files stay listed until they parse.
				err = &exitError{code: 1, err: fmt.Errorf("%d session logs were not imported whole (see error: and incomplete: above); the rest was imported", n)}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&home, "dsh-home", "", "DSH's home (default dsh.home: $MULL_DSH_HOME, $DSH_HOME or ~/.dsh)")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	f.BoolVar(&dryRun, "dry-run", false, "read and check the logs, store nothing and remember no position")
	f.BoolVar(&learn, "learn", false, "after importing, run one retro per imported session (LLM spend: asks first, showing the estimate)")
	f.BoolVar(&yes, "yes", false, "with --learn: do not ask, enqueue the retros")
	return cmd
}

// sessionSet collects the sessions an import stored events of.
type sessionSet struct {
	mu  sync.Mutex
	set map[string]bool
}

func (s *sessionSet) wrap(a *app) dshimport.Ingester {
	return dshimport.IngestFunc(func(ctx context.Context, b []events.Event, source string) (int, int, error) {
		r, err := a.ingest.IngestBatch(ctx, b, source)
		if err == nil && r.Stored > 0 {
			s.mu.Lock()
			if s.set == nil {
				s.set = map[string]bool{}
			}
			for _, e := range b {
				s.set[e.SessionID] = true
			}
			s.mu.Unlock()
		}
		return r.Stored, r.Duplicates, err
	})
}

func (s *sessionSet) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.set))
	for id := range s.set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// retroEstimate is the most one retro can cost: its prompt estimate (the
// fixed prompt, a full library and a full excerpt) plus its max_tokens,
// every prompt token a cache miss, at the price of now.
func retroEstimate(a *app, now time.Time) (tokens, nanoUSD int64) {
	m := a.cfg.LLM.ForKind(retrosession.Args{}.Kind())
	caps := jobs.RetroCaps(a.cfg.Retro.Excerpt).WithDefaults()
	full := retro.Library{Text: strings.Repeat("x", retro.MaxLibraryRunes)}
	prompt := llm.EstimatePromptTokens(retrosession.Messages(full, strings.Repeat("x", caps.MaxChars)))
	maxTokens := int64(m.MaxTokens)
	return prompt + maxTokens, a.llm.Pricing().MaxCost(m.Model, now, prompt, maxTokens)
}

// notWhole counts the files the scan found errors in or left incomplete.
func notWhole(sum dshimport.Summary) int {
	paths := map[string]bool{}
	for _, e := range sum.Errors {
		paths[e.Path] = true
	}
	for _, f := range sum.Incomplete {
		paths[f.Path] = true
	}
	return len(paths)
}

// learnImported asks, then enqueues one retro_session per imported primary
// session. A session whose log DSH is still writing waits: its retro now
// would read half a session as the whole. One whose import is incomplete
// is learned from (a cut or damaged log will not get better by waiting,
// and its failure is often the lesson), and its retro's excerpt says so.
func learnImported(ctx context.Context, g *globals, a *app, ids []string, yes bool) error {
	var sessions []store.Session
	for _, id := range ids {
		s, err := a.store.GetSession(ctx, id)
		if err != nil {
			return err
		}
		if !s.Primary {
			continue
		}
		imp, err := a.store.SessionImport(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case imp != nil && imp.State == store.ImportWaiting:
			fmt.Fprintf(g.stdout, "learn: session %s: no retro yet, DSH is still writing its log; run --learn again once it is done\n", id)
			continue
		case imp != nil && imp.State == store.ImportIncomplete:
			fmt.Fprintf(g.stdout, "learn: session %s: its import is incomplete (%s); its retro is told the log is incomplete\n", id, imp.Reason)
		}
		sessions = append(sessions, s)
	}
	if len(sessions) == 0 {
		fmt.Fprintln(g.stdout, "learn: no new primary session was imported; no retro to run")
		return nil
	}
	tokens, nano := retroEstimate(a, time.Now())
	n := int64(len(sessions))
	fmt.Fprintf(g.stdout, "learn: %d sessions, one retro each: at most %d tokens, at most $%.4f at today's prices (model %s)\n",
		n, n*tokens, float64(n*nano)/1e9, a.cfg.LLM.ForKind(retrosession.Args{}.Kind()).Model)
	if !yes {
		fmt.Fprint(g.stdout, "run these retros? [y/N] ")
		line, _ := bufio.NewReader(importStdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			fmt.Fprintln(g.stdout, "learn: no retro enqueued (the import is kept)")
			return nil
		}
	}
	err := a.store.InTx(ctx, func(tx *sql.Tx) error {
		for _, s := range sessions {
			if err := retrosession.Enqueue(ctx, tx, a.client, s, time.Time{}); err != nil {
				return fmt.Errorf("enqueue the retro of %s: %w", s.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "learn: %d retros enqueued on the llm queue; `mull jobs list` or `mull llm calls` follows them\n", n)
	return nil
}

// importIngester stores imported events through the same ingest service as
// POST /v1/events, so pushed and imported copies of an event meet as one.
func importIngester(a *app) (dshimport.Ingester, error) {
	return dshimport.IngestFunc(func(ctx context.Context, b []events.Event, source string) (int, int, error) {
		r, err := a.ingest.IngestBatch(ctx, b, source)
		return r.Stored, r.Duplicates, err
	}), nil
}

// progressPrinter prints a line to stderr about every 5% of the files.
func progressPrinter(g *globals) func(dshimport.Progress) {
	last := -1
	return func(p dshimport.Progress) {
		step := max(p.FilesTotal/20, 1)
		if p.FilesDone == 0 || p.FilesDone == last || (p.FilesDone%step != 0 && p.FilesDone != p.FilesTotal) {
			return
		}
		last = p.FilesDone
		fmt.Fprintf(g.stderr, "import: files %d/%d, events %d, read %s of %s\n",
			p.FilesDone, p.FilesTotal, p.Events, megabytes(p.BytesDone), megabytes(p.BytesTotal))
	}
}

func printImportSummary(g *globals, home string, s dshimport.Summary, dryRun bool) {
	verb := "imported"
	if dryRun {
		verb = "dry run (nothing stored) of"
	}
	fmt.Fprintf(g.stdout, "%s %s: %d session logs (%d read, %d unchanged, %d waiting for DSH to finish writing, %d incomplete)\n",
		verb, home, s.Files, s.Read, s.Unchanged, s.Waiting, len(s.Incomplete))
	fmt.Fprintf(g.stdout, "events: %d read", s.Events)
	if !dryRun {
		fmt.Fprintf(g.stdout, ", %d stored, %d duplicates", s.Stored, s.Duplicates)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(g.stdout, ", %d left out (mull would refuse them)", s.Skipped)
	}
	fmt.Fprintln(g.stdout)
	for _, l := range s.LeftOut {
		fmt.Fprintf(g.stdout, "left out: %s\n", l)
	}
	if s.Skipped > len(s.LeftOut) {
		fmt.Fprintf(g.stdout, "left out: %d more (see the log)\n", s.Skipped-len(s.LeftOut))
	}
	for _, e := range s.Errors {
		fmt.Fprintf(g.stdout, "error: %s\n", e)
	}
	for _, f := range s.Incomplete {
		fmt.Fprintf(g.stdout, "incomplete: %s\n", f)
	}
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
