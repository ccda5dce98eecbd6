package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultOptions are the seed's DEFAULT_AGGREGATE_OPTIONS (spec §4.5):
// passThreshold 60 (reported only), regressionTolerance 0,
// maxFailedCells 0. config [bench] defaults to the same numbers.
var DefaultOptions = Options{PassThreshold: 60, RegressionTolerance: 0, MaxFailedCells: 0}

// ValidateOptions is the seed's validateAggregateOptions: nonsense knobs
// are refused loudly rather than silently mis-deciding.
func ValidateOptions(o Options) error {
	p, t := o.PassThreshold, o.RegressionTolerance
	if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 || p > 100 {
		return fmt.Errorf("passThreshold must be a finite number in 0..100, got %v", p)
	}
	if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
		return fmt.Errorf("regressionTolerance must be a finite non-negative number, got %v", t)
	}
	if o.MaxFailedCells < 0 {
		return fmt.Errorf("maxFailedCells must be a non-negative integer, got %d", o.MaxFailedCells)
	}
	return nil
}

// Decide is the seed's decideBenchmark: the binding verdict over a run's
// cells, made by code and never by a model. The run is REJECTED when
//
//	(a) either side has no usable (ok) cell;
//	(b) failed candidate cells exceed o.MaxFailedCells;
//	(c) the candidate's overall mean is below the reference's minus
//	    o.RegressionTolerance;
//	(d) any case's candidate mean is below its reference mean minus the
//	    tolerance (only where both sides have a mean);
//
// and ACCEPTED when no rule rejects. PassThreshold is reported
// (CandidatePasses) and never gates. Reasons lists every rule that
// rejects, in that order, for the person reading the run. Feedback is
// every non-empty cell feedback in input order, AutoRollback always false:
// a run never rolls anything back.
func Decide(runID, refinementID string, cells []Cell, o Options, now time.Time) (Decision, error) {
	a, err := Aggregate(cells, o)
	if err != nil {
		return Decision{}, err
	}
	regressed := regressionCases(a.PerCase, o.RegressionTolerance)
	reasons := rejections(a, o, regressed)
	d := Decision{
		RunID:            runID,
		RefinementID:     refinementID,
		Status:           Accepted,
		ReferenceOverall: a.ReferenceOverall,
		CandidateOverall: a.CandidateOverall,
		PerCase:          a.PerCase,
		RegressionCases:  regressed,
		FailedCells:      a.FailedCells,
		FailedReference:  a.FailedReference,
		FailedCandidate:  a.FailedCandidate,
		UsableReference:  a.UsableReference,
		UsableCandidate:  a.UsableCandidate,
		Feedback:         feedback(cells),
		Reasons:          reasons,
		PassThreshold:    o.PassThreshold,
		CandidatePasses:  a.CandidateOverall != nil && *a.CandidateOverall >= o.PassThreshold,
		AutoRollback:     false,
		CreatedAt:        now,
	}
	if len(reasons) > 0 {
		d.Status = Rejected
	}
	return d, nil
}

// regressionCases are the cases whose candidate mean fell below the
// reference mean minus tol, sorted (the seed's findRegressionCases).
func regressionCases(perCase map[string]CaseMeans, tol float64) []string {
	out := []string{}
	for id, m := range perCase {
		if m.Reference != nil && m.Candidate != nil && regressed(*m.Candidate, *m.Reference, tol) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// regressed is the seed's regression test, overall and per case: the
// candidate below the reference minus the tolerance. Equal is not a
// regression.
func regressed(cand, ref, tol float64) bool { return cand < ref-tol }

// rejections are the reasons rules (a) to (d) reject the run, one line
// each; none means ACCEPTED.
func rejections(a Aggregation, o Options, regressedCases []string) []string {
	reasons := []string{}
	if a.UsableReference == 0 {
		reasons = append(reasons, "no usable reference cells")
	}
	if a.UsableCandidate == 0 {
		reasons = append(reasons, "no usable candidate cells")
	}
	if a.FailedCandidate > o.MaxFailedCells {
		reasons = append(reasons, fmt.Sprintf("%d failed candidate cells > max_failed_cells %d", a.FailedCandidate, o.MaxFailedCells))
	}
	ref, cand := a.ReferenceOverall, a.CandidateOverall
	if ref != nil && cand != nil && regressed(*cand, *ref, o.RegressionTolerance) {
		reasons = append(reasons, fmt.Sprintf("candidate overall %s < reference overall %s − tolerance %s", num(*cand), num(*ref), num(o.RegressionTolerance)))
	}
	for _, id := range regressedCases {
		m := a.PerCase[id]
		reasons = append(reasons, fmt.Sprintf("case %s regressed: %s < %s − %s", id, num(*m.Candidate), num(*m.Reference), num(o.RegressionTolerance)))
	}
	return reasons
}

// num shows a mean to people: at most two decimals, no trailing zeros.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// feedback is every non-empty cell feedback, in input order (the seed's
// collectFeedback), as given.
func feedback(cells []Cell) []string {
	out := []string{}
	for _, c := range cells {
		if strings.TrimSpace(c.Feedback) != "" {
			out = append(out, c.Feedback)
		}
	}
	return out
}
