package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Errors is several configuration problems reported together (every
// unknown key of a file), one *Error a line. errors.As finds the first
// *Error in it.
type Errors []*Error

func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, err := range e {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives the problems one by one.
func (e Errors) Unwrap() []error {
	out := make([]error, len(e))
	for i, err := range e {
		out[i] = err
	}
	return out
}

// unknownKeys names every key of a file that is no configuration key, each
// with the nearest real key when one is close. Of an unknown table only the
// table is named, not each key inside it.
func unknownKeys(und []toml.Key) error {
	var errs Errors
	var tables []string
	for _, k := range und {
		key := k.String()
		if slices.ContainsFunc(tables, func(t string) bool { return strings.HasPrefix(key, t+".") }) {
			continue
		}
		tables = append(tables, key)
		problem := "unknown key"
		if s := suggestKey(k); s != "" {
			problem += " (did you mean " + s + "?)"
		}
		errs = append(errs, &Error{Key: key, Problem: problem})
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// keyPattern is one key a file may hold: its segments, "*" where a table
// takes any name ([jobs.KIND], [workers.queues], [budget.limits]).
type keyPattern []string

// fileKeys lists every key a file may hold, tables included.
func fileKeys() []keyPattern {
	var out []keyPattern
	var visit func(prefix []string, t reflect.Type)
	visit = func(prefix []string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := append(slices.Clone(prefix), name)
			out = append(out, key)
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Struct:
				if ft != reflect.TypeFor[Duration]() {
					visit(key, ft)
				}
			case reflect.Slice:
				// [[cron]]: a table array's keys carry no index.
				if e := ft.Elem(); e.Kind() == reflect.Struct {
					visit(key, e)
				}
			case reflect.Map:
				named := append(slices.Clone(key), "*")
				out = append(out, named)
				if e := ft.Elem(); e.Kind() == reflect.Struct {
					visit(named, e)
				}
			}
		}
	}
	visit(nil, reflect.TypeFor[Config]())
	return out
}

// suggestKey is the configuration key nearest to an unknown one, or "".
func suggestKey(k toml.Key) string {
	var candidates []string
	for _, p := range fileKeys() {
		if len(p) != len(k) {
			continue
		}
		// A "*" segment takes the name the file gave it.
		filled := slices.Clone(p)
		for i, seg := range p {
			if seg == "*" {
				filled[i] = k[i]
			}
		}
		candidates = append(candidates, toml.Key(filled).String())
	}
	if s := nearest(k.String(), candidates); s != "" {
		return s
	}
	// The right name in the wrong table: [llm] zone = … is budget.zone.
	leaf := k[len(k)-1]
	var same []string
	for _, p := range fileKeys() {
		if p[len(p)-1] == leaf && !slices.Contains(p, "*") {
			same = append(same, strings.Join(p, "."))
		}
	}
	if len(same) == 1 {
		return same[0]
	}
	return ""
}

// nearest is the candidate closest to word by edit distance, if it is close
// enough to be a typo (at most a third of word's length, and at most 4
// edits), or "".
func nearest(word string, candidates []string) string {
	best, bestD := "", 0
	limit := min(4, max(1, len(word)/3))
	for _, c := range candidates {
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes (keys are
// ASCII). Twenty lines were less than a dependency: none of the libraries
// mull may use exports one (cobra's is unexported).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// OtherEnv are MULL_* variables that are no configuration key but are
// read by mull's command, its tests and its scripts; UnknownEnv leaves them
// alone. A name ending in "*" is a family.
var OtherEnv = []string{
	"MULL_CONFIG",     // the config file (--config)
	"MULL_TEST_*",     // tests: MULL_TEST_DATABASE_URL, MULL_TEST_LOG, MULL_TEST_CHROMIUM, MULL_TEST_AS_MULL, MULL_TEST_SCREENSHOTS_DIR
	"MULL_PG_BIN",     // scripts/pg-up: PostgreSQL server binaries
	"MULL_E2E_*",      // integrations/dsh/e2e.sh: MULL_E2E_DSH, _DSH_DIR, _NODE22, _KEEP
	"MULL_FAKE_MODE",  // the DSH plugin's fake mull (testkit/fake-mull.mjs)
	"MULL_FAKE_TOKEN", // the same
	"MULL_MUTANTS_*",  // scripts/mutants
	// A DSH benchmark cell's capability, which mull gives the cell's DSH
	// and the bridge plugin reads in its benchmark mode.
	"MULL_BENCH_CAPABILITY",
}

// EnvNames lists every MULL_* variable mull reads as configuration.
func EnvNames() []string {
	var names []string
	for _, k := range Keys() {
		names = append(names, envName(k))
	}
	return names
}

func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// UnknownEnv warns about each MULL_* variable of environ that mull does not
// read, with the nearest one it does when that is close: a mistyped
// variable is otherwise ignored without a word. One line each, in the
// order of environ.
func UnknownEnv(environ []string) []string {
	known := EnvNames()
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || slices.Contains(known, name) || otherEnv(name) {
			continue
		}
		msg := name + " is not a mull setting; ignored"
		if key := fileOnly(name); key != "" {
			msg = name + " is not read: " + key + " is set in the config file only; ignored"
		} else if s := nearest(strings.TrimPrefix(name, EnvPrefix), trimAll(known, EnvPrefix)); s != "" {
			msg = fmt.Sprintf("%s is not a mull setting (did you mean %s%s?); ignored", name, EnvPrefix, s)
		}
		out = append(out, msg)
	}
	return out
}

func otherEnv(name string) bool {
	for _, o := range OtherEnv {
		if p, ok := strings.CutSuffix(o, "*"); ok && strings.HasPrefix(name, p) || o == name {
			return true
		}
	}
	return false
}

// fileOnly is the file-only key or table a variable would set if those
// could be set from the environment (MULL_WORKERS_QUEUES_LLM is
// [workers.queues], MULL_LLM_THINKING… is not one), or "".
func fileOnly(name string) string {
	for _, p := range fileKeys() {
		n := len(p)
		switch {
		case !slices.Contains(p, "*") && envName(strings.Join(p, ".")) == name:
			return strings.Join(p, ".")
		case n >= 2 && p[n-1] == "*" && !slices.Contains(p[:n-1], "*") &&
			strings.HasPrefix(name, envName(strings.Join(p[:n-1], "."))+"_"):
			return "[" + strings.Join(p[:n-1], ".") + "]"
		}
	}
	return ""
}

func trimAll(names []string, prefix string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.TrimPrefix(n, prefix)
	}
	return out
}
