package negledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/learn/trust"
	"github.com/mullhq/mull/store"
)

// rounds is how many times a request re-reads and re-decides when the fact
// changed under it (optimistic concurrency) before ErrConflict.
const rounds = 3

// The request kinds a receipt's hash covers (with the request itself).
const (
	opCheck   = "check"
	opObserve = "observe"
	opFS      = "fs"
	opRecord  = "record"
	opResolve = "resolve"
)

// requestHash is the receipt key of a request: sha256 over its kind and its
// canonical JSON (encoding/json sorts map keys, so args in any order hash
// alike).
func requestHash(kind string, r any) string {
	b, err := json.Marshal(r)
	if err != nil {
		b = fmt.Appendf(nil, "%#v", r)
	}
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func newLeaseID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "lease-" + hex.EncodeToString(b)
}

func (s *Service) mode(workspace string) ledger.Mode { return ledger.Mode(s.modeFor(workspace)) }

// The longest identifiers and paths a request may carry, in bytes: they
// are stored (events, leases, observations) and indexed, and Postgres
// refuses a btree entry over 2704 bytes.
const (
	IDMax   = 256  // tool_call_id, session, operation_id
	PathMax = 4096 // workspace, cwd, a path
	// CommandMax is the longest command line the ledger tracks: a longer
	// one is not tracked at all (Check allows it, Observe records
	// nothing), it is not refused.
	CommandMax = 64 << 10
)

func tooLong(field string, v string, max int) error {
	if len(v) > max {
		return &FieldError{Field: field, Problem: fmt.Sprintf("%d bytes; at most %d", len(v), max)}
	}
	return nil
}

func validateSession(session string) error {
	if strings.TrimSpace(session) == "" {
		return &FieldError{Field: "session", Problem: "required (the DSH session id the call belongs to)"}
	}
	return tooLong("session", session, IDMax)
}

func validateWorkspace(ws, cwd string) error {
	switch {
	case strings.TrimSpace(ws) == "":
		return &FieldError{Field: "workspace", Problem: "required (the DSH cwd of the session)"}
	case strings.TrimSpace(cwd) == "":
		return &FieldError{Field: "cwd", Problem: "required (the session's cwd)"}
	}
	if err := tooLong("workspace", ws, PathMax); err != nil {
		return err
	}
	return tooLong("cwd", cwd, PathMax)
}

// validateCall checks what every call-based request needs.
func validateCall(c Call) error {
	switch {
	case strings.TrimSpace(c.ToolCallID) == "":
		return &FieldError{Field: "tool_call_id", Problem: "required (DSH's callId of the tool call)"}
	case strings.TrimSpace(c.Tool) == "":
		return &FieldError{Field: "tool", Problem: "required (the tool's name, e.g. bash)"}
	}
	if err := tooLong("tool_call_id", c.ToolCallID, IDMax); err != nil {
		return err
	}
	if err := tooLong("tool", c.Tool, IDMax); err != nil {
		return err
	}
	if err := validateSession(c.Session); err != nil {
		return err
	}
	if err := validateWorkspace(c.Workspace, c.Cwd); err != nil {
		return err
	}
	if wd, ok := c.Args["workdir"].(string); ok {
		if err := tooLong("args.workdir", wd, PathMax); err != nil {
			return err
		}
	}
	if p, ok := c.Args["file_path"].(string); ok {
		if err := tooLong("args.file_path", p, PathMax); err != nil {
			return err
		}
	}
	return nil
}

// tracked: the call's fingerprint is one the ledger keeps (a command line
// over CommandMax is not tracked).
func tracked(fp ledger.Fingerprint) bool { return len(fp.CommandLine) <= CommandMax }

// checkSession refuses a request whose session mull knows under another
// workspace: a session's workspace is fixed by its first event, and one
// session must not read or write another workspace's ledger. A session mull
// has not seen yet (its first events may still be on their way) is fine
// unless known is set (an explicit fact needs a session mull knows: 404
// otherwise).
func (s *Service) checkSession(ctx context.Context, session, workspace string, known bool) error {
	sess, err := s.store.GetSession(ctx, session)
	if errors.Is(err, store.ErrNotFound) {
		return sessionIn(session, workspace, store.SessionWorkspace{}, known)
	}
	if err != nil {
		return err
	}
	return sessionIn(session, workspace, store.SessionWorkspace{Known: true, Workspace: sess.Workspace}, known)
}

// sessionIn is checkSession's rule on the session as read.
func sessionIn(session, workspace string, sess store.SessionWorkspace, known bool) error {
	switch {
	case !sess.Known && known:
		return fmt.Errorf("session %s: %w", session, ErrNotFound)
	case sess.Known && sess.Workspace != workspace:
		return &FieldError{Field: "workspace", Problem: fmt.Sprintf("session %s belongs to workspace %q, not %q", session, sess.Workspace, workspace)}
	}
	return nil
}

// witnessesNow are the current values of the fact's file-state
// preconditions, from the stored observations (a key never observed is
// left out: unknown counts as unchanged).
func witnessesNow(obs map[string]store.LedgerObservation) []ledger.Witness {
	var now []ledger.Witness
	for k, o := range obs {
		now = append(now, ledger.Observation{Observed: o.Observed, Version: o.Version, At: o.ObservedAt}.Witness(k))
	}
	return now
}

// preconditionKeys are the keys of a fact's file-state preconditions.
func preconditionKeys(evidence []ledger.Witness) []string {
	var keys []string
	for _, w := range evidence {
		if w.Role == ledger.Precondition && w.Kind == ledger.WitnessFileState && w.Path != "" {
			keys = append(keys, w.Path)
		}
	}
	return keys
}

type observationReader func(scope string, keys []string) (map[string]store.LedgerObservation, error)

func nowFor(read observationReader, f ledger.Fact) ([]ledger.Witness, error) {
	keys := preconditionKeys(f.Evidence)
	if len(keys) == 0 {
		return nil, nil
	}
	obs, err := read(f.Scope, keys)
	if err != nil {
		return nil, err
	}
	return witnessesNow(obs), nil
}

func conflict(err error) bool { return errors.Is(err, store.ErrLedgerConflict) }

// Check decides a tool call about to run. With no current fact for the
// call it answers allow after one indexed read and writes nothing.
func (s *Service) Check(ctx context.Context, r CheckRequest) (CheckResponse, error) {
	if err := validateCall(r.Call); err != nil {
		return CheckResponse{}, err
	}
	mode := s.mode(r.Workspace)
	resp := CheckResponse{Verdict: ledger.AnswerAllow, Mode: mode, CheckedAt: s.store.Now()}
	if mode == ledger.ModeOff {
		return resp, nil
	}
	fp, ok := ledger.CallFingerprint(r.Tool, r.Args, r.Cwd, s.cfg.CommandTools, s.cfg.ReadTools)
	if !ok || !tracked(fp) {
		return resp, nil
	}
	key := fp.Key()
	// One read: the fact and the session's workspace (needed only when a
	// fact intercepts).
	f, found, sess, err := s.store.LedgerCheckRead(ctx, r.Workspace, fp.Kind, key, r.Session)
	if err != nil || !found || !ledger.Intercepts(f) {
		return resp, err
	}
	if err := sessionIn(r.Session, r.Workspace, sess, false); err != nil {
		return CheckResponse{}, err
	}
	// The read above decided the fast paths (no fact: allow; warn mode and
	// a fact that intercepts: warn), which write nothing. Anything that
	// writes re-reads the fact inside its transaction, holding its row,
	// and re-decides there, but a plain deny (below).
	keys := preconditionKeys(f.Evidence)
	now, err := nowFor(func(scope string, keys []string) (map[string]store.LedgerObservation, error) {
		return s.store.LedgerObservations(ctx, scope, keys)
	}, f)
	if err != nil {
		return CheckResponse{}, err
	}
	at := s.store.Now()
	v, _ := ledger.VerdictFor(f, now, at)
	step := ledger.Decide(mode, v)
	if step.Answer == ledger.AnswerWarn {
		// Warn mode: run it; the note comes from Observe if it fails
		// again. Nothing is counted, nothing written.
		resp.Verdict, resp.FactID, resp.CheckedAt, resp.RetryAt = ledger.AnswerWarn, f.ID, at, ledger.RetryAt(f.Retry)
		return resp, nil
	}
	op := store.LedgerOp{RequestHash: requestHash(opCheck, r), Kind: opCheck, ToolCallID: r.ToolCallID, Session: r.Session}
	for round := range rounds {
		var raw []byte
		var replay bool
		if round == 0 && step.Answer == ledger.AnswerDeny && len(keys) == 0 {
			// A plain deny of a fact with no file preconditions depends
			// on the fact's row alone: decided on the read above and
			// counted in one statement that holds the row at the
			// revision read (the answer decide would give at that
			// revision). A changed fact re-decides in a transaction.
			raw, replay, err = s.store.LedgerDeny(ctx, op, f.ID, f.Revision, CheckResponse{Verdict: ledger.AnswerDeny,
				Mode: mode, FactID: f.ID, Reason: ledger.DenyReason(f, v, ledger.BasisOf(f, now)), RetryAt: ledger.RetryAt(f.Retry),
				CheckedAt: at})
		} else {
			raw, replay, err = s.store.LedgerWrite(ctx, op, func(lt *store.LedgerTx) (any, error) {
				return s.decide(lt, r, mode, fp.Kind, key)
			})
		}
		if conflict(err) {
			continue
		}
		if err != nil {
			return CheckResponse{}, err
		}
		var out CheckResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			return CheckResponse{}, fmt.Errorf("ledger: check receipt: %w", err)
		}
		if replay {
			s.logger.Debug("ledger check replayed", "tool_call_id", r.ToolCallID, "fact", out.FactID)
		}
		return out, nil
	}
	return CheckResponse{}, ErrConflict
}

// decide is Check's transaction: the call's current fact, read and held,
// decided by learn/ledger's table and applied (a counted deny, or the
// competition for the lease).
func (s *Service) decide(lt *store.LedgerTx, r CheckRequest, mode ledger.Mode, kind ledger.Kind, key string) (CheckResponse, error) {
	out := CheckResponse{Verdict: ledger.AnswerAllow, Mode: mode, CheckedAt: lt.Now}
	f, found, err := lt.Current(r.Workspace, kind, key)
	if err != nil || !found || !ledger.Intercepts(f) {
		return out, err
	}
	if f.Lease, _, err = lt.CurrentLease(f.ID); err != nil {
		return out, err
	}
	now, err := nowFor(lt.Observations, f)
	if err != nil {
		return out, err
	}
	v, staleKinds := ledger.VerdictFor(f, now, lt.Now)
	step := ledger.Decide(mode, v)
	out.FactID, out.RetryAt = f.ID, ledger.RetryAt(f.Retry)
	switch {
	case step.Answer == ledger.AnswerWarn:
		out.Verdict = ledger.AnswerWarn
		return out, nil
	case step.Answer == ledger.AnswerDeny:
		if _, err := lt.Deny(f.ID, f.Revision); err != nil {
			return out, err
		}
		out.Verdict, out.Reason = ledger.AnswerDeny, ledger.DenyReason(f, v, ledger.BasisOf(f, now))
		return out, nil
	case !step.Compete:
		out.FactID, out.RetryAt = 0, nil
		return out, nil
	}
	rev := f.Revision
	leased := f.Lease != nil && f.Lease.ExpiresAt.After(lt.Now)
	if step.CommitStale && f.Status != ledger.Stale && !leased {
		// The seed's read-through invalidation: commit the stale
		// transition first, so the lease binds the new revision. Not
		// when the fact is stale already or another call holds its lease:
		// a new revision would void the holder's verification.
		if err := lt.TransitionFacts([]store.TransitionItem{{FactID: f.ID, ExpectedRevision: rev,
			Transition: ledger.Transition{Kind: ledger.Stale, At: lt.Now, StaleWitnesses: staleKinds, Via: r.ToolCallID}}}); err != nil {
			return out, err
		}
		rev++
	}
	lease, err := lt.AcquireLease(f.ID, rev, newLeaseID(), s.cfg.LeaseTTL.D())
	if err != nil {
		return out, err
	}
	if lease.Granted {
		out.Verdict, out.LeaseID = ledger.AnswerVerifyRetry, lease.Lease.ID
		if v == ledger.VerdictStaleAllow {
			out.Reason = ledger.StaleNote(f)
		}
		return out, nil
	}
	answer, countDenied := ledger.Losing(mode)
	out.Verdict = answer
	if countDenied {
		if _, err := lt.Deny(f.ID, rev); err != nil {
			return out, err
		}
		out.Reason = ledger.InProgressReason(store.LedgerCallerCallID(lease.Lease.Owner), lease.Lease.ExpiresAt)
	} else {
		out.Reason = ledger.InProgressNote(store.LedgerCallerCallID(lease.Lease.Owner), lease.Lease.ExpiresAt)
	}
	return out, nil
}

func validateOutcome(o Outcome) error {
	switch o.Status {
	case Succeeded, Failed, Released:
	case "":
		return &FieldError{Field: "outcome.status", Problem: "required: succeeded, failed or released"}
	default:
		return &FieldError{Field: "outcome.status", Problem: fmt.Sprintf("%q is not one of succeeded, failed, released", o.Status)}
	}
	return nil
}

// fieldError turns learn/ledger's "field: problem" errors into a
// FieldError naming that field.
func fieldError(err error, fallback string) error {
	if err == nil {
		return nil
	}
	if f, p, ok := strings.Cut(err.Error(), ": "); ok && f != "" && !strings.Contains(f, " ") {
		return &FieldError{Field: f, Problem: p}
	}
	return &FieldError{Field: fallback, Problem: err.Error()}
}

func input(f ledger.Fact) store.FactInput {
	return store.FactInput{Scope: f.Scope, Fingerprint: f.Fingerprint, Key: f.Key, Claim: f.Claim, Preview: f.Preview,
		Evidence: f.Evidence, Retry: f.Retry, Source: f.Source}
}

func (s *Service) deps() []ledger.Dependency {
	out := make([]ledger.Dependency, len(s.cfg.CommandDependencies))
	for i, d := range s.cfg.CommandDependencies {
		out[i] = ledger.Dependency{Tool: d.Tool, CommandLine: d.CommandLine, Cwd: d.Cwd, Files: d.Files}
	}
	return out
}

// failureFact is the fact a failed call records, built at now inside the
// transaction: a command with its declared dependencies' preconditions
// when they were observed in time, a missing file with its absent
// preconditions.
func (s *Service) failureFact(lt *store.LedgerTx, r ObserveRequest, fp ledger.Fingerprint, class ledger.Class) (ledger.Fact, error) {
	if class == ledger.ClassFileMissing {
		return ledger.NewFileFact(r.Workspace, fp, nil, lt.Now), nil
	}
	c := ledger.CommandFailure{Scope: r.Workspace, Fingerprint: fp, Stderr: r.Outcome.Stderr, At: lt.Now,
		RetryAfter: s.cfg.CommandRetryAfter.D()}
	if r.Outcome.ExitCode != nil {
		c.ExitCode = *r.Outcome.ExitCode
	}
	deps := s.deps()
	if files := ledger.DependencyFiles(deps, fp); len(files) > 0 && r.CheckedAt != nil {
		obs, err := lt.Observations(r.Workspace, files)
		if err != nil {
			return ledger.Fact{}, err
		}
		latest := map[string]ledger.Observation{}
		for k, o := range obs {
			latest[k] = ledger.Observation{Observed: o.Observed, Version: o.Version, At: o.ObservedAt}
		}
		d := ledger.Dependencies(deps, fp, latest, *r.CheckedAt, s.cfg.CommandEvidenceMaxAge.D())
		if d.Missing != "" {
			s.logger.Debug("ledger: command failure without dependency evidence", "why", d.Why(s.cfg.CommandEvidenceMaxAge.D()))
		}
		c.Preconditions = d.Preconditions
	}
	return ledger.NewCommandFact(c), nil
}

// Observe records what a call that ran proved, and settles its lease.
func (s *Service) Observe(ctx context.Context, r ObserveRequest) (ObserveResponse, error) {
	if err := validateCall(r.Call); err != nil {
		return ObserveResponse{}, err
	}
	if err := validateOutcome(r.Outcome); err != nil {
		return ObserveResponse{}, err
	}
	mode := s.mode(r.Workspace)
	resp := ObserveResponse{Effect: EffectNone, Mode: mode}
	fp, ok := ledger.CallFingerprint(r.Tool, r.Args, r.Cwd, s.cfg.CommandTools, s.cfg.ReadTools)
	class, err := ledger.Classify(r.Tool, ledger.Result{Status: r.Outcome.Status, ExitCode: r.Outcome.ExitCode,
		ErrorCode: r.Outcome.ErrorCode}, s.cfg.CommandTools, s.cfg.ReadTools)
	if err != nil {
		return ObserveResponse{}, fieldError(err, "outcome")
	}
	if mode == ledger.ModeOff || !ok || !tracked(fp) {
		return resp, nil
	}
	if err := s.checkSession(ctx, r.Session, r.Workspace, false); err != nil {
		return ObserveResponse{}, err
	}
	key := fp.Key()
	if class != ledger.ClassCommandFailure && class != ledger.ClassFileMissing {
		// A success or a release changes something only when there is a
		// current fact: with none (one indexed read), effect none and no
		// transaction, no receipt.
		_, found, err := s.store.LedgerCurrentFact(ctx, r.Workspace, fp.Kind, key)
		if err != nil {
			return ObserveResponse{}, err
		}
		if !found {
			return resp, nil
		}
	}
	op := store.LedgerOp{RequestHash: requestHash(opObserve, r), Kind: opObserve, ToolCallID: r.ToolCallID, Session: r.Session}
	for range rounds {
		raw, _, err := s.store.LedgerWrite(ctx, op, func(lt *store.LedgerTx) (any, error) {
			return s.observe(lt, r, mode, fp, key, class)
		})
		if conflict(err) {
			continue
		}
		if err != nil {
			return ObserveResponse{}, err
		}
		var out ObserveResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			return ObserveResponse{}, fmt.Errorf("ledger: observe receipt: %w", err)
		}
		return out, nil
	}
	return ObserveResponse{}, ErrConflict
}

func (s *Service) observe(lt *store.LedgerTx, r ObserveRequest, mode ledger.Mode, fp ledger.Fingerprint, key string, class ledger.Class) (ObserveResponse, error) {
	out := ObserveResponse{Effect: EffectNone, Mode: mode}
	cur, found, err := lt.Current(r.Workspace, fp.Kind, key)
	if err != nil {
		return out, err
	}
	var caller string
	if found {
		if cur.Lease, caller, err = lt.CurrentLease(cur.ID); err != nil {
			return out, err
		}
	}
	o := ledger.Observed{Class: class}
	var now []ledger.Witness
	if found {
		o.Current = &cur
		if l := cur.Lease; l != nil {
			// The holder is the lease's owner (this session's call): with
			// the lease id Check granted, or without it when the check
			// timed out on the plugin's side before it learnt the id.
			o.Holder = caller == store.LedgerCaller(r.Session, r.ToolCallID) && (r.LeaseID == "" || l.ID == r.LeaseID)
			o.LeasedByOther = !o.Holder && l.ExpiresAt.After(lt.Now)
		}
		if ledger.Intercepts(cur) {
			if now, err = nowFor(lt.Observations, cur); err != nil {
				return out, err
			}
			o.Verdict, _ = ledger.VerdictFor(cur, now, lt.Now)
		}
	}
	step := ledger.Observe(mode, o)
	failure := class == ledger.ClassCommandFailure || class == ledger.ClassFileMissing
	var nf ledger.Fact
	if failure && (step.Effect == EffectEvidence || step.Effect == EffectRecorded) {
		if nf, err = s.failureFact(lt, r, fp, class); err != nil {
			return out, err
		}
	}
	if class == ledger.ClassFileMissing && step.Effect != EffectNone {
		// The failure itself observed the file absent, under every key of
		// the fact: a present observation before it is out of date, and a
		// later one stales the fact.
		var rows []store.LedgerObservation
		for _, k := range preconditionKeys(nf.Evidence) {
			rows = append(rows, store.LedgerObservation{Key: k, Observed: ledger.Absent, ToolCallID: r.ToolCallID})
		}
		if err := lt.UpsertObservations(r.Workspace, rows); err != nil {
			return out, err
		}
	}
	var fact ledger.Fact
	switch {
	case step.Effect == EffectNone:
		if found {
			out.FactID = cur.ID
		}
		if o.LeasedByOther && mode == ledger.ModeWarn {
			out.Note = ledger.InProgressNote(cur.Lease.Owner, cur.Lease.ExpiresAt)
		}
		return out, nil
	case o.Holder:
		how := map[string]store.Settlement{EffectResolved: store.SettleSucceeded, EffectEvidence: store.SettleFailed,
			EffectReleased: store.SettleReleased}[step.Effect]
		var in *store.FactInput
		if how == store.SettleFailed {
			v := input(nf)
			in = &v
		}
		res, err := lt.SettleLease(cur.ID, cur.Lease.ID, how, in)
		if err != nil {
			return out, err
		}
		fact = res.Fact
		if !res.Applied {
			out.FactID = cur.ID
			return out, nil
		}
		if how == store.SettleSucceeded && (cur.Status == ledger.Stale || o.Verdict == ledger.VerdictStaleAllow) {
			// The seed's staleNote: the lease was granted on a stale fact
			// and its holder's success settled it.
			out.Note = ledger.StaleNote(fact)
		}
	case step.Effect == EffectResolved:
		if err := lt.TransitionFacts([]store.TransitionItem{{FactID: cur.ID, ExpectedRevision: cur.Revision,
			Transition: ledger.Transition{Kind: ledger.Resolved, At: lt.Now, Via: r.ToolCallID}}}); err != nil {
			return out, err
		}
		if fact, err = lt.Fact(cur.ID); err != nil {
			return out, err
		}
	case step.Effect == EffectEvidence || step.Effect == EffectRecorded:
		expect := int64(store.NoCurrentFact)
		if found {
			expect = cur.Revision
		}
		flags := store.RecordFlags{Duplicate: step.Duplicate}
		var dedupe ledger.WarnDecision
		if step.Note == ledger.NoteWarn && found {
			memo := ledger.WarnMemo{}
			if r.Session != "" {
				w, err := lt.LastWarned(r.Session, cur.ID)
				if err != nil {
					return out, err
				}
				memo = ledger.WarnMemo{Found: w.Found, WarnedAt: w.At, Evidence: w.Evidence, Entries: w.Entries}
			}
			dedupe = ledger.WarnDedupe(memo, ledger.EvidenceDigest(nf.Evidence), lt.Now, s.cfg.WarningRepeat())
			flags.Warn = dedupe.Warn
		}
		res, err := lt.RecordFact(input(nf), expect, flags)
		if err != nil {
			return out, err
		}
		fact = res.Fact
		if res.Replayed {
			out.FactID = fact.ID
			return out, nil
		}
		if !res.New {
			step.Effect = EffectEvidence
		} else {
			step.Effect = EffectRecorded
		}
		out.Duplicate = res.Counted.Duplicate
		if res.Counted.Warn {
			out.Note = ledger.WarnNote(fact, ledger.BasisOf(fact, now))
			if dedupe.Remember && r.Session != "" {
				if err := lt.RememberWarning(r.Session, fact.ID, ledger.EvidenceDigest(nf.Evidence), ledger.DedupeMax); err != nil {
					return out, err
				}
			}
		}
	default:
		return out, fmt.Errorf("ledger: observe step %s without a lease", step)
	}
	if step.Note == ledger.NoteStale && found {
		out.Note = ledger.StaleNote(cur)
	}
	if step.ForgetWarning {
		if err := lt.ForgetWarnings(fact.ID); err != nil {
			return out, err
		}
	}
	out.Effect, out.FactID = step.Effect, fact.ID
	return out, nil
}

// ObserveFS stores file observations and stales, all or nothing, every
// current fact of the workspace whose precondition they contradict.
func (s *Service) ObserveFS(ctx context.Context, r FSRequest) (FSResponse, error) {
	if err := validateSession(r.Session); err != nil {
		return FSResponse{}, err
	}
	if err := validateWorkspace(r.Workspace, r.Cwd); err != nil {
		return FSResponse{}, err
	}
	switch {
	case len(r.Observations) == 0:
		return FSResponse{}, &FieldError{Field: "observations", Problem: "at least one observation is required"}
	case len(r.Observations) > FSObservationsMax:
		return FSResponse{}, &FieldError{Field: "observations", Problem: fmt.Sprintf("%d observations; at most %d per request (send the rest in another)",
			len(r.Observations), FSObservationsMax)}
	}
	var rows []store.LedgerObservation
	touched := map[string]bool{}
	for i, o := range r.Observations {
		for _, f := range []struct{ name, v string }{{"path", o.Path}, {"display_path", o.DisplayPath}, {"version", o.Version}} {
			if err := tooLong(fmt.Sprintf("observations[%d].%s", i, f.name), f.v, PathMax); err != nil {
				return FSResponse{}, err
			}
		}
		if err := tooLong(fmt.Sprintf("observations[%d].tool_call_id", i), o.ToolCallID, IDMax); err != nil {
			return FSResponse{}, err
		}
		ws, err := ledger.FSWitnesses(r.Cwd, o.Path, o.DisplayPath, o.Observed, o.Version)
		if err != nil {
			fe := fieldError(err, "observed").(*FieldError)
			fe.Field = fmt.Sprintf("observations[%d].%s", i, fe.Field)
			return FSResponse{}, fe
		}
		for _, w := range ws {
			rows = append(rows, store.LedgerObservation{Key: w.Path, Observed: w.Observed, Version: w.Version, ToolCallID: o.ToolCallID})
			touched[w.Path] = true
		}
	}
	if err := s.checkSession(ctx, r.Session, r.Workspace, false); err != nil {
		return FSResponse{}, err
	}
	// No receipt: storing an observation is idempotent (the latest state
	// of its key), and a stale transition applies to an active fact only.
	// A receipt would make a later identical observation (the file back at
	// v1) a "replay" that stores nothing.
	op := store.LedgerOp{Kind: opFS, Session: r.Session}
	if len(r.Observations) == 1 && r.Observations[0].ToolCallID != "" {
		op.ToolCallID = r.Observations[0].ToolCallID
	}
	keys := make([]string, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	for range rounds {
		raw, _, err := s.store.LedgerWrite(ctx, op, func(lt *store.LedgerTx) (any, error) {
			// The facts whose preconditions name an observed key, held
			// (in id order) before the observations are written: the
			// order a missing file's observe takes too (fact, then its
			// observations), so the two never deadlock.
			ids, err := lt.FactsNaming(r.Workspace, keys)
			if err != nil {
				return nil, err
			}
			held, err := lt.LockFacts(ids)
			if err != nil {
				return nil, err
			}
			if err := lt.UpsertObservations(r.Workspace, rows); err != nil {
				return nil, err
			}
			if _, err := lt.TrimObservations(r.Workspace, ObservationsMax); err != nil {
				return nil, err
			}
			out := FSResponse{Stored: len(rows), Staled: []int64{}}
			var items []store.TransitionItem
			for _, f := range held {
				if f.Scope != r.Workspace || !f.Current || f.Status != ledger.Active {
					continue
				}
				now, err := nowFor(lt.Observations, f)
				if err != nil {
					return nil, err
				}
				if stale := ledger.Mismatched(f.Evidence, now); len(stale) > 0 {
					items = append(items, store.TransitionItem{FactID: f.ID, ExpectedRevision: f.Revision,
						Transition: ledger.Transition{Kind: ledger.Stale, At: lt.Now, StaleWitnesses: stale, Via: op.ToolCallID}})
					out.Staled = append(out.Staled, f.ID)
				}
			}
			return out, lt.TransitionFacts(items)
		})
		if conflict(err) {
			continue
		}
		if err != nil {
			return FSResponse{}, err
		}
		var out FSResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			return FSResponse{}, fmt.Errorf("ledger: fs receipt: %w", err)
		}
		return out, nil
	}
	return FSResponse{}, ErrConflict
}

// ExplicitMax is how many current explicit facts (source api, from POST
// /v1/ledger/facts) a workspace may hold: every one reaches its prompt.
const ExplicitMax = 100

// ObservationsMax is how many file observations a workspace keeps: the
// oldest go first (a key no longer known stales nothing).
const ObservationsMax = 10000

// FSObservationsMax is how many observations one /v1/ledger/fs request
// may carry.
const FSObservationsMax = 100

// Record stores an explicit fact (approach_rejected, api_unavailable).
func (s *Service) Record(ctx context.Context, r RecordRequest) (ledger.Fact, error) {
	if err := validateSession(r.Session); err != nil {
		return ledger.Fact{}, err
	}
	if err := tooLong("operation_id", r.OperationID, IDMax); err != nil {
		return ledger.Fact{}, err
	}
	if err := tooLong("workspace", r.Workspace, PathMax); err != nil {
		return ledger.Fact{}, err
	}
	switch {
	case strings.TrimSpace(r.OperationID) == "":
		return ledger.Fact{}, &FieldError{Field: "operation_id", Problem: "required (one per logical record; a retry sends the same)"}
	case strings.TrimSpace(r.Workspace) == "":
		return ledger.Fact{}, &FieldError{Field: "workspace", Problem: "required (the DSH cwd of the session)"}
	case r.Fingerprint.Kind != ledger.ApproachRejected && r.Fingerprint.Kind != ledger.APIUnavailable:
		return ledger.Fact{}, &FieldError{Field: "fingerprint.kind", Problem: fmt.Sprintf(
			"%q: only %s and %s are recorded explicitly (command_failed and file_missing come from tool calls)",
			r.Fingerprint.Kind, ledger.ApproachRejected, ledger.APIUnavailable)}
	}
	claim, evidence, err := ledger.ValidateRecord(r.Fingerprint.Kind, r.Fingerprint, r.Claim, r.Evidence, r.Retry)
	if err != nil {
		return ledger.Fact{}, fieldError(err, "evidence")
	}
	// Every text of an explicit fact is shown (admin, CLI): credentials
	// redacted by the trust gate, like the fingerprint the store keeps.
	for i := range evidence {
		w := &evidence[i]
		for _, f := range []*string{&w.StderrSignature, &w.Code, &w.Path, &w.Observed, &w.Version, &w.Key, &w.Root, &w.Hash} {
			if *f != "" {
				*f = trust.Check(*f).Text
			}
		}
	}
	// An explicit fact reaches the workspace's prompt as a constraint:
	// only a session mull knows, in that workspace, may write one.
	if err := s.checkSession(ctx, r.Session, r.Workspace, true); err != nil {
		return ledger.Fact{}, err
	}
	in := store.FactInput{Scope: r.Workspace, Fingerprint: r.Fingerprint, Key: r.Fingerprint.Key(), Claim: claim,
		Evidence: evidence, Retry: r.Retry, Source: ledger.SourceAPI}
	op := store.LedgerOp{RequestHash: requestHash(opRecord, r), Kind: opRecord, ToolCallID: "record:" + r.OperationID, Session: r.Session}
	for range rounds {
		raw, _, err := s.store.LedgerWrite(ctx, op, func(lt *store.LedgerTx) (any, error) {
			// Counted and added in turn with every other explicit record
			// of the workspace: the cap is exact under a race.
			if err := lt.LockExplicit(r.Workspace); err != nil {
				return nil, err
			}
			n, err := lt.CountExplicit(r.Workspace)
			if err != nil {
				return nil, err
			}
			if n >= ExplicitMax {
				if cur, found, err := lt.Current(in.Scope, in.Fingerprint.Kind, in.Key); err != nil {
					return nil, err
				} else if !found || cur.Status == ledger.Resolved {
					return nil, &FieldError{Field: "workspace", Problem: fmt.Sprintf(
						"%q has %d current explicit facts, the most it may hold; resolve some first", r.Workspace, n)}
				}
			}
			res, err := lt.RecordFact(in, 0, store.RecordFlags{})
			return res.Fact.ID, err
		})
		if conflict(err) {
			continue
		}
		if err != nil {
			return ledger.Fact{}, err
		}
		var id int64
		if err := json.Unmarshal(raw, &id); err != nil {
			return ledger.Fact{}, fmt.Errorf("ledger: record receipt: %w", err)
		}
		return s.Get(ctx, id)
	}
	return ledger.Fact{}, ErrConflict
}

// ResolveReasonMax is the longest reason a person may give Resolve, in
// characters.
const ResolveReasonMax = 500

// Resolve retracts a fact by a person's hand, with the reason: the fact is
// resolved (Transition.By "operator") and its lease dropped. A fact already
// resolved is returned as it is.
func (s *Service) Resolve(ctx context.Context, id int64, reason string) (ledger.Fact, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ledger.Fact{}, &FieldError{Field: "reason", Problem: "required (why the fact no longer holds)"}
	}
	if strings.ContainsAny(reason, "\n\r") || len([]rune(reason)) > ResolveReasonMax {
		return ledger.Fact{}, &FieldError{Field: "reason", Problem: fmt.Sprintf("one line of at most %d characters", ResolveReasonMax)}
	}
	// The reason is stored with the fact and shown wherever it is: through
	// the write-time gate, like every text mull keeps.
	v := trust.Check(ledger.Sanitize(reason))
	if v.Quarantined {
		return ledger.Fact{}, &FieldError{Field: "reason", Problem: "refused by the trust gate: " + v.Reason}
	}
	reason = v.Text
	op := store.LedgerOp{RequestHash: requestHash(opResolve, map[string]any{"id": id, "reason": reason}), Kind: opResolve,
		ToolCallID: "operator"}
	for range rounds {
		_, _, err := s.store.LedgerWrite(ctx, op, func(lt *store.LedgerTx) (any, error) {
			f, err := lt.Fact(id)
			if err != nil {
				return nil, err
			}
			switch {
			case f.Status == ledger.Resolved:
				return id, nil
			case !f.Current:
				return nil, &FieldError{Field: "id", Problem: fmt.Sprintf("fact %d is superseded by %d; resolve that one", id, f.SupersededBy)}
			}
			return id, lt.TransitionFacts([]store.TransitionItem{{FactID: id, ExpectedRevision: f.Revision,
				Transition: ledger.Transition{Kind: ledger.Resolved, At: lt.Now, Reason: reason, By: "operator"}}})
		})
		if conflict(err) {
			continue
		}
		if err != nil {
			return ledger.Fact{}, err
		}
		return s.Get(ctx, id)
	}
	return ledger.Fact{}, ErrConflict
}

// Get is one fact, with its lease.
func (s *Service) Get(ctx context.Context, id int64) (ledger.Fact, error) {
	return s.store.LedgerFact(ctx, id)
}

// List lists facts, newest first.
func (s *Service) List(ctx context.Context, f Filter) ([]ledger.Fact, error) {
	lf := store.LedgerFilter{Scope: f.Workspace, CurrentOnly: f.CurrentOnly, Limit: f.Limit}
	if f.Status != "" {
		switch f.Status {
		case ledger.Active, ledger.Stale, ledger.Resolved, ledger.Superseded:
		default:
			return nil, &FieldError{Field: "status", Problem: fmt.Sprintf("%q is not one of active, stale, resolved, superseded", f.Status)}
		}
		lf.Statuses = []ledger.Status{f.Status}
	}
	if f.Limit < 0 || f.Limit > 1000 {
		return nil, &FieldError{Field: "limit", Problem: fmt.Sprintf("%d is not between 0 and 1000", f.Limit)}
	}
	facts, err := s.store.LedgerFacts(ctx, lf)
	if facts == nil && err == nil {
		facts = []ledger.Fact{}
	}
	return facts, err
}

// Stats are the three honest counters over a workspace ("" for all).
func (s *Service) Stats(ctx context.Context, workspace string) (ledger.Summary, error) {
	return s.store.LedgerSummary(ctx, workspace)
}

// How long the sweep keeps bookkeeping: receipts answer replays of a
// request for a day (after that a replay re-decides, and the unique events
// still count it once); observations are the world's state for a week.
const (
	receiptKeep     = 24 * time.Hour
	observationKeep = 7 * 24 * time.Hour
	warningKeepMin  = time.Hour
	// FactKeep: a resolved or superseded fact (history: it intercepts
	// nothing) is deleted with its events 30 days after it last changed.
	FactKeep = 30 * 24 * time.Hour
)

// Sweep releases expired leases and prunes bookkeeping (ledger_sweep).
func (s *Service) Sweep(ctx context.Context) (SweepReport, error) {
	now := s.store.Now()
	var rep SweepReport
	var err error
	if rep.LeasesReleased, err = s.store.LedgerReleaseExpiredLeases(ctx, now); err != nil {
		return rep, err
	}
	if rep.Expired, err = s.store.LedgerCountDue(ctx, now); err != nil {
		return rep, err
	}
	warnKeep := max(s.cfg.WarningRepeat(), warningKeepMin)
	rep.ReceiptsPruned, rep.ObservationsPruned, rep.WarningsPruned, err = s.store.LedgerPrune(ctx,
		now.Add(-receiptKeep), now.Add(-observationKeep), now.Add(-warnKeep))
	if err != nil {
		return rep, err
	}
	rep.FactsPruned, err = s.store.LedgerPruneFacts(ctx, now.Add(-FactKeep))
	return rep, err
}

// Constraints are the current facts of a workspace that still intercept
// (active, or stale with their evidence back) and whose retry is not yet
// allowed (ledger.Constrains: a command past its cooldown is no
// constraint), for the digest's Known failures block, newest first, at
// most limit.
func (s *Service) Constraints(ctx context.Context, workspace string, limit int) ([]ledger.Fact, error) {
	if limit <= 0 {
		return []ledger.Fact{}, nil
	}
	facts, err := s.store.LedgerFacts(ctx, store.LedgerFilter{Scope: workspace, CurrentOnly: true,
		Statuses: []ledger.Status{ledger.Active, ledger.Stale}, Limit: 1000})
	if err != nil {
		return nil, err
	}
	out := []ledger.Fact{}
	at := s.store.Now()
	for _, f := range facts {
		if len(out) == limit {
			break
		}
		if !ledger.Constrains(f, at) {
			continue
		}
		if f.Status == ledger.Stale {
			now, err := nowFor(func(scope string, keys []string) (map[string]store.LedgerObservation, error) {
				return s.store.LedgerObservations(ctx, scope, keys)
			}, f)
			if err != nil {
				return nil, err
			}
			if len(ledger.Mismatched(f.Evidence, now)) > 0 {
				continue
			}
		}
		out = append(out, f)
	}
	return out, nil
}
