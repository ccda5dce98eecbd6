package ledger

import (
	"fmt"
	"strings"
	"time"
)

// Dependency is one declared command dependency (ledger.command_dependencies,
// the seed's commandDependencies): the tool, the whole command text and
// the effective cwd must match a call exactly; Files are DSH's absolute
// display paths (no globs, no shell parsing).
type Dependency struct {
	Tool        string
	CommandLine string
	Cwd         string
	Files       []string
}

// Observation is the latest observed state of one file key.
type Observation struct {
	// Observed is present or absent; Version is present's opaque version.
	Observed string
	Version  string
	// At is when mull received the observation.
	At time.Time
}

// Witness is the observation as a file-state precondition for key.
func (o Observation) Witness(key string) Witness {
	w := Witness{Role: Precondition, Kind: WitnessFileState, Path: key, Observed: o.Observed}
	if o.Observed == Present {
		w.Version = o.Version
	}
	return w
}

// Why a command's failure carries no dependency evidence.
const (
	// DepsNotDeclared: no command_dependencies entry matches the call.
	DepsNotDeclared = "not-declared"
	// DepsNotObserved: a declared file was not observed before the call
	// (declaring a file is not observing it).
	DepsNotObserved = "not-observed"
	// DepsTooOld: a declared file's observation was older than
	// command_evidence_max_age when the call was checked.
	DepsTooOld = "too-old"
)

// DepsResult is what Dependencies found.
type DepsResult struct {
	// Preconditions are the declared files' states, one file-state
	// witness each, when every one was observed in time; nil otherwise.
	Preconditions []Witness
	// Missing says why there are none (DepsNotDeclared, DepsNotObserved,
	// DepsTooOld); empty when there are.
	Missing string
	// File is the declared file that was not observed or too old.
	File string
}

// Dependencies are the precondition witnesses a failed command records,
// by the newer seed's rule: the first declared dependency matching the
// call's fingerprint exactly (tool, trimmed command line, effective cwd),
// and every one of its files observed (latest, by display path) at or
// before checkedAt and no older than maxAge then. Otherwise none, and why
// (the fact is then cooldown only, and its note says so). An observation
// after checkedAt is not a snapshot of the state the command ran in: it
// is never back-filled.
func Dependencies(deps []Dependency, fp Fingerprint, latest map[string]Observation, checkedAt time.Time, maxAge time.Duration) DepsResult {
	d, ok := matching(deps, fp)
	if !ok {
		return DepsResult{Missing: DepsNotDeclared}
	}
	var ws []Witness
	for _, file := range d.Files {
		o, seen := latest[file]
		switch {
		case !seen || o.At.After(checkedAt):
			return DepsResult{Missing: DepsNotObserved, File: file}
		case checkedAt.Sub(o.At) > maxAge:
			return DepsResult{Missing: DepsTooOld, File: file}
		}
		ws = append(ws, o.Witness(file))
	}
	return DepsResult{Preconditions: ws}
}

func matching(deps []Dependency, fp Fingerprint) (Dependency, bool) {
	if fp.Kind != CommandFailed {
		return Dependency{}, false
	}
	for _, d := range deps {
		if strings.TrimSpace(d.Tool) == fp.Tool && strings.TrimSpace(d.CommandLine) == fp.CommandLine &&
			strings.TrimSpace(d.Cwd) == fp.Cwd && len(d.Files) > 0 {
			return d, true
		}
	}
	return Dependency{}, false
}

// DependencyFiles are the declared files of the dependency matching fp,
// the keys whose observations Dependencies reads (nil when none matches),
// so the service loads only those.
func DependencyFiles(deps []Dependency, fp Fingerprint) []string {
	d, _ := matching(deps, fp)
	return d.Files
}

// FSWitnesses are one DSH fs/observed event as the current file-state of
// every key of the file (FileKeys: the model path scoped by cwd, its
// resolved path, the display path), what ObserveFS stores and compares
// facts' preconditions with. Errors name the request's field: the display
// path (or a model path) is required, observed is present or absent, and
// present needs a version while absent has none.
func FSWitnesses(cwd, modelPath, displayPath, observed, version string) ([]Witness, error) {
	if displayPath == "" && modelPath == "" {
		return nil, fmt.Errorf("display_path: required (DSH's resolved path of the observed file)")
	}
	keys := FileKeys(cwd, modelPath, displayPath)
	check := Witness{Role: Precondition, Kind: WitnessFileState, Path: keys[0], Observed: observed, Version: version}
	if err := ValidateWitness(check); err != nil {
		return nil, err
	}
	o := Observation{Observed: observed, Version: version}
	ws := make([]Witness, len(keys))
	for i, k := range keys {
		ws[i] = o.Witness(k)
	}
	return ws, nil
}

// Why says in words why a failure carries no dependency evidence, for
// logs and the API's explanation; "" when it does.
func (r DepsResult) Why(maxAge time.Duration) string {
	switch r.Missing {
	case DepsNotDeclared:
		return "no command_dependencies entry matches this command"
	case DepsNotObserved:
		return r.File + " was not observed before the call"
	case DepsTooOld:
		return r.File + " was observed more than " + maxAge.String() + " before the call"
	}
	return ""
}
