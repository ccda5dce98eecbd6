package harness

// GateOutcome is the verdict a review row records (the seed's
// gateOutcome, audit.ts): a review that said no is declined; an approved
// review whose plan has no edit is assessed; otherwise the edits decide:
// approved when at least one applied, failed when a rule rejected every
// one.
func GateOutcome(approved bool, plannedEdits, applied int) Outcome {
	switch {
	case !approved:
		return Declined
	case plannedEdits == 0:
		return Assessed
	case applied > 0:
		return Approved
	}
	return Failed
}
