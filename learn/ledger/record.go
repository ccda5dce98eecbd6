package ledger

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/trust"
)

// ClaimMax is the longest claim an explicit record may carry, in runes.
const ClaimMax = 300

// FieldMax is the longest fingerprint or witness field an explicit record
// may carry, in bytes: they are compared on every check and shown in the
// digest.
const FieldMax = 4096

// ValidateRecord checks an explicit fact (POST /v1/ledger/facts; the kinds
// not wired to tools, approach_rejected and api_unavailable, are recorded
// only this way) and gives back the claim and evidence to store:
//   - kind matches the fingerprint's kind (the seed's "fact kind X must
//     match fingerprint kind Y"), and the fingerprint is valid;
//   - at least one outcome witness, every witness valid (the seed's "a
//     negative fact requires at least one outcome witness");
//   - the claim is one line of 1..ClaimMax runes;
//   - every text passes the trust gate: the claim and every witness field
//     are refused with a clear error when they read like an instruction
//     to the agent; credentials in the claim and a stderr signature are
//     redacted (the stderr signature is also cut to StderrMax). Paths,
//     keys and hashes are kept as given, since they must equal what is
//     observed later; the digest gates them again when it shows them.
//
// Every error names the field as the request does ("claim", "evidence[1].path",
// "retry_condition.at", "fingerprint.endpoint").
func ValidateRecord(kind Kind, fp Fingerprint, claim string, evidence []Witness, retry *RetryCondition) (string, []Witness, error) {
	if kind != fp.Kind {
		return "", nil, fmt.Errorf("fingerprint.kind: fact kind %s must match fingerprint kind %s", kind, fp.Kind)
	}
	if err := fp.Validate(); err != nil {
		return "", nil, err
	}
	for name, v := range fp.fields() {
		if len(v) > FieldMax {
			return "", nil, fmt.Errorf("fingerprint.%s: longer than %d bytes", name, FieldMax)
		}
	}
	c, err := recordClaim(claim)
	if err != nil {
		return "", nil, err
	}
	if err := ValidateEvidence(evidence); err != nil {
		return "", nil, err
	}
	out := make([]Witness, len(evidence))
	for i, w := range evidence {
		if w, err = gateWitness(w); err != nil {
			return "", nil, fmt.Errorf("evidence[%d].%w", i, err)
		}
		out[i] = w
	}
	if err := ValidateRetry(retry); err != nil {
		return "", nil, err
	}
	return c, out, nil
}

// recordClaim is the stored claim: trimmed, one line, gated, redacted.
func recordClaim(claim string) (string, error) {
	claim = strings.TrimSpace(claim)
	n := utf8.RuneCountInString(claim)
	switch {
	case n == 0:
		return "", fmt.Errorf("claim: required (one line saying what was proven not to work)")
	case n > ClaimMax:
		return "", fmt.Errorf("claim: %d characters, at most %d", n, ClaimMax)
	case strings.ContainsAny(claim, "\n\r\u0085\u2028\u2029"):
		return "", fmt.Errorf("claim: must be one line")
	}
	v := trust.Check(claim)
	if v.Quarantined {
		return "", fmt.Errorf("claim: refused by the trust gate: %s", v.Reason)
	}
	return Sanitize(v.Text), nil
}

// gateWitness refuses a witness with a field the gate quarantines and
// redacts its stderr signature.
func gateWitness(w Witness) (Witness, error) {
	for _, f := range []struct{ name, v string }{
		{"stderrSignature", w.StderrSignature}, {"code", w.Code}, {"path", w.Path}, {"observed", w.Observed},
		{"version", w.Version}, {"key", w.Key}, {"root", w.Root}, {"hash", w.Hash},
	} {
		if len(f.v) > FieldMax {
			return w, fmt.Errorf("%s: longer than %d bytes", f.name, FieldMax)
		}
		if f.v != "" && trust.Check(f.v).Quarantined {
			return w, fmt.Errorf("%s: refused by the trust gate: %s", f.name, trust.Check(f.v).Reason)
		}
	}
	if w.StderrSignature != "" {
		w.StderrSignature = GatedStderrSignature(w.StderrSignature)
	}
	return w, nil
}
