// TEMPORARY (slice B only): minimal stand-ins for slice A's learn/bench
// functions so that benches builds and tests before A lands. Delete this
// whole file at merge; A's implementations replace it.
package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mullhq/mull/learn/harness"
)

// ValidateCase (stub) checks the required texts only.
func ValidateCase(c Case) error {
	for _, f := range []struct{ name, v string }{{"id", c.ID}, {"title", c.Title}, {"statement", c.Statement}, {"rubric", c.Rubric}} {
		if f.v == "" {
			return &FieldError{Field: f.name, Reason: "must be non-empty"}
		}
	}
	if len([]rune(c.Rubric)) > 4000 {
		return &FieldError{Field: "rubric", Reason: "longer than 4000 characters"}
	}
	return nil
}

func stubHash(v any) string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// CaseHash (stub).
func CaseHash(c Case) string {
	return stubHash(map[string]string{"id": c.ID, "statement": c.Statement, "rubric": c.Rubric, "capability": c.Capability})
}

// StateHash (stub).
func StateHash(s Snapshot) string {
	return stubHash(map[string]any{"kind": s.Kind, "entries": s.Entries, "digest": s.Digest, "history": s.History})
}

// Derive (stub).
func Derive(ref Snapshot, r harness.Refinement, id string, now time.Time) (Snapshot, error) {
	if ref.Kind != HarnessSnapshot {
		return Snapshot{}, errors.New("derive: reference is not a harness snapshot")
	}
	st := harness.State{}
	for k, m := range ref.Entries {
		st[k] = map[string]harness.Entry{}
		for id, e := range m {
			st[k][id] = e
		}
	}
	for _, e := range r.Edits {
		if !e.Applied {
			continue
		}
		if e.Action == harness.Delete {
			delete(st[e.Kind], e.ID)
		} else if e.AfterEntry != nil {
			if st[e.Kind] == nil {
				st[e.Kind] = map[string]harness.Entry{}
			}
			st[e.Kind][e.ID] = *e.AfterEntry
		}
	}
	c := Snapshot{ID: id, Kind: HarnessSnapshot, Session: ref.Session, Entries: st,
		History: append(slices.Clone(ref.History), r.ID), RefinementID: r.ID, Reference: ref.ID, CapturedAt: now}
	c.StateHash = StateHash(c)
	return c, nil
}

// CheckDelta (stub): the since rules only.
func CheckDelta(ref, cand Snapshot, r harness.Refinement, since []string) error {
	if !slices.Contains(since, r.ID) {
		return &DeltaError{RefinementID: r.ID, Reason: RefinementNotFound}
	}
	if len(since) != 1 {
		return &DeltaError{RefinementID: r.ID, Reason: HistoryMismatch}
	}
	return nil
}

// ValidateCell (stub).
func ValidateCell(c Cell) error {
	if c.Status == CellFailed && c.Score != nil {
		return errors.New("failed-cell-score-not-null")
	}
	if c.Status == CellOK && (c.Score == nil || *c.Score < 0 || *c.Score > 100) {
		return errors.New("ok cell needs a score in 0..100")
	}
	if c.Status != CellOK && c.Status != CellFailed {
		return fmt.Errorf("status %q", c.Status)
	}
	return nil
}

// Decide (stub): overall means only.
func Decide(runID, refinementID string, cells []Cell, o Options, now time.Time) (Decision, error) {
	d := Decision{RunID: runID, RefinementID: refinementID, PerCase: map[string]CaseMeans{}, RegressionCases: []string{},
		Feedback: []string{}, Reasons: []string{}, PassThreshold: o.PassThreshold, CreatedAt: now}
	var sum [2]float64
	var n [2]int
	for _, c := range cells {
		i := 0
		if c.Side == Candidate {
			i = 1
		}
		if c.Feedback != "" {
			d.Feedback = append(d.Feedback, c.Feedback)
		}
		if c.Status != CellOK {
			d.FailedCells++
			continue
		}
		sum[i] += *c.Score
		n[i]++
	}
	d.UsableReference, d.UsableCandidate = n[0], n[1]
	d.Status = Accepted
	if n[0] == 0 || n[1] == 0 {
		d.Status = Rejected
		return d, nil
	}
	r, c := sum[0]/float64(n[0]), sum[1]/float64(n[1])
	d.ReferenceOverall, d.CandidateOverall = &r, &c
	if c < r-o.RegressionTolerance {
		d.Status = Rejected
	}
	return d, nil
}

// FieldError (stub): slice A's named-field refusal of ValidateCase.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }
