package refinereview

import (
	"fmt"

	"github.com/mullhq/mull/learn/harness"
)

// reviewAnswer and planAnswer keep the model's JSON whole for
// harness.ParseReview / ParseProposal, which are stricter than
// encoding/json (each refusal names its JSON path): an answer that fails
// them is llm Invalid, the model's fault, retried then dead-lettered.
type reviewAnswer struct {
	raw []byte
	r   harness.Review
}

func (a *reviewAnswer) UnmarshalJSON(b []byte) error {
	a.raw = append(a.raw[:0], b...)
	return nil
}

func (a *reviewAnswer) Validate() error {
	r, err := harness.ParseReview(a.raw)
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	a.r = r
	return nil
}

type planAnswer struct {
	raw []byte
	p   harness.Proposal
}

func (a *planAnswer) UnmarshalJSON(b []byte) error {
	a.raw = append(a.raw[:0], b...)
	return nil
}

func (a *planAnswer) Validate() error {
	p, err := harness.ParseProposal(a.raw)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	a.p = p
	return nil
}
