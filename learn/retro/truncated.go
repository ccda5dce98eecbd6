package retro

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ParseTruncated reads an answer the model stopped at max-tokens (finish
// reason length), as the seed does: the section being written when it
// stopped is dropped, and of the complete ones only the additive sections
// are kept (Additive). A missing handoff is allowed (the job then keeps the
// previous one); a present one must still be 3–5 lines. It fails when no
// complete section is left or one that is left is malformed.
func ParseTruncated(content string) (Output, error) {
	dec := json.NewDecoder(strings.NewReader(content))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Output{}, errors.New("truncated output does not start with a json object")
	}
	done := map[string]json.RawMessage{}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break // the section it stopped in
		}
		if k, ok := key.(string); ok {
			done[k] = v
		}
	}
	if len(done) == 0 {
		return Output{}, errors.New("truncated output has no complete section")
	}
	whole, err := json.Marshal(done)
	if err != nil {
		return Output{}, err
	}
	var o Output
	wd := json.NewDecoder(strings.NewReader(string(whole)))
	wd.DisallowUnknownFields()
	if err := wd.Decode(&o); err != nil {
		return Output{}, fmt.Errorf("truncated output does not fit the schema: %w", err)
	}
	o = Additive(o)
	if err := o.validate(false); err != nil {
		return Output{}, err
	}
	return o, nil
}
