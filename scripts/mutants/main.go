// Command mutants breaks each pinned rule in turn and reports which breaks
// no test notices: a rule whose mutant survives has no test that fails
// when the rule breaks. It is not part of CI's default run.
//
//	go run ./scripts/mutants [-list scripts/mutants.txt] [-only REGEXP] [-postgres] [-v]
//
// The list (scripts/mutants.txt) is data: one block per mutant, blocks
// separated by blank lines, "#" lines are comments:
//
//	why:  promotion needs a score of at least 10
//	file: learn/memory/scope.go
//	from: PromoteMinScore = 10.0
//	to:   PromoteMinScore = 9.5
//	test: go test -count=1 -short ./learn/memory/
//
// from must occur exactly once in file (an error otherwise: the code moved
// and the list needs updating). Each mutant is applied in place, its test
// command run from the checkout's root with sh -c, and the file restored
// byte for byte, also on an interrupt. A mutant is killed when its command
// fails; a command that fails to build counts as an error, not a kill.
// Before any mutant, every distinct command is run once on the unchanged
// code and must pass. Tests run on SQLite only unless -postgres is given
// (MULL_TEST_DATABASE_URL is kept then, cleared otherwise).
//
// Exit status: 0 every mutant killed, 1 some survived or errored, 2 a bad
// list or a failing baseline.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// mutant is one block of the list.
type mutant struct {
	line                      int
	why, file, from, to, test string
}

func main() {
	list := flag.String("list", "scripts/mutants.txt", "the mutant list")
	only := flag.String("only", "", "run only mutants whose why, file or test matches this regular expression")
	postgres := flag.Bool("postgres", false, "keep MULL_TEST_DATABASE_URL, so store tests also run on PostgreSQL")
	verbose := flag.Bool("v", false, "print the output of each surviving mutant's and each failing baseline's command")
	timeout := flag.Duration("timeout", 10*time.Minute, "the longest one test command may run")
	flag.Parse()
	os.Exit(run(*list, *only, *postgres, *verbose, *timeout))
}

func run(list, only string, postgres, verbose bool, timeout time.Duration) int {
	data, err := os.ReadFile(list)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		return 2
	}
	ms, err := parse(list, string(data))
	if err == nil && only != "" {
		ms, err = filter(ms, only)
	}
	if err == nil {
		err = check(ms)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		return 2
	}
	env := os.Environ()
	if !postgres {
		env = without(env, "MULL_TEST_DATABASE_URL")
	}
	r := &runner{env: env, timeout: timeout}
	defer r.restoreAll()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stop
		r.restoreAll()
		fmt.Fprintln(os.Stderr, "mutants: interrupted; every file restored")
		os.Exit(130)
	}()

	if !r.baseline(ms) {
		return 2
	}
	killed, errs := 0, 0
	var survivors []mutant
	for i, m := range ms {
		outcome, d, out := r.try(m)
		fmt.Printf("%3d/%d %-8s %5.1fs  %s: %s\n", i+1, len(ms), outcome, d.Seconds(), m.file, m.why)
		switch outcome {
		case "killed":
			killed++
		case "SURVIVED":
			survivors = append(survivors, m)
			if verbose {
				fmt.Println(indent(out))
			}
		default:
			errs++
			fmt.Println(indent(out))
		}
	}
	fmt.Printf("\nscore: %d/%d killed", killed, len(ms))
	if errs > 0 {
		fmt.Printf(", %d errors", errs)
	}
	fmt.Println()
	for _, m := range survivors {
		fmt.Printf("survived: %s:%d %s (%s → %s)\n", list, m.line, m.why, m.from, m.to)
	}
	if killed != len(ms) {
		return 1
	}
	return 0
}

// parse reads the list's blocks.
func parse(name, data string) ([]mutant, error) {
	var ms []mutant
	var cur *mutant
	flush := func() error {
		if cur == nil {
			return nil
		}
		m := *cur
		cur = nil
		for k, v := range map[string]string{"why": m.why, "file": m.file, "from": m.from, "test": m.test} {
			if v == "" {
				return fmt.Errorf("%s:%d: the mutant has no %s:", name, m.line, k)
			}
		}
		if m.from == m.to {
			return fmt.Errorf("%s:%d: from and to are the same", name, m.line)
		}
		ms = append(ms, m)
		return nil
	}
	for i, l := range strings.Split(data, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		case strings.HasPrefix(t, "#"):
			continue
		}
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want key: value, got %q", name, i+1, l)
		}
		val = strings.TrimSpace(val)
		if cur == nil {
			cur = &mutant{line: i + 1}
		}
		switch strings.TrimSpace(key) {
		case "why":
			cur.why = val
		case "file":
			cur.file = val
		case "from":
			cur.from = unquote(val)
		case "to":
			cur.to = unquote(val)
		case "test":
			cur.test = val
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q (why, file, from, to, test)", name, i+1, key)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%s: no mutants", name)
	}
	return ms, nil
}

// unquote lets a value keep leading or trailing spaces, or be empty, in
// backquotes: `  x `.
func unquote(v string) string {
	if len(v) >= 2 && v[0] == '`' && v[len(v)-1] == '`' {
		return v[1 : len(v)-1]
	}
	return v
}

func filter(ms []mutant, expr string) ([]mutant, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("-only: %v", err)
	}
	var out []mutant
	for _, m := range ms {
		if re.MatchString(m.why) || re.MatchString(m.file) || re.MatchString(m.test) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-only %q matches no mutant", expr)
	}
	return out, nil
}

// check makes sure every mutant applies: its from text occurs exactly once.
func check(ms []mutant) error {
	var errs []error
	for _, m := range ms {
		b, err := os.ReadFile(m.file)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %v", m.line, err))
			continue
		}
		if n := bytes.Count(b, []byte(m.from)); n != 1 {
			errs = append(errs, fmt.Errorf("line %d: %q occurs %d times in %s, want once (update the list)", m.line, m.from, n, m.file))
		}
	}
	return errors.Join(errs...)
}

type runner struct {
	env     []string
	timeout time.Duration

	mu    sync.Mutex
	saved map[string][]byte // files changed now, with their original bytes
}

func (r *runner) baseline(ms []mutant) bool {
	ok := true
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.test] {
			continue
		}
		seen[m.test] = true
		start := time.Now()
		out, err := r.exec(m.test)
		fmt.Printf("baseline %5.1fs  %s\n", time.Since(start).Seconds(), m.test)
		if err != nil {
			fmt.Printf("baseline FAILED (%v): %s\n%s\n", err, m.test, indent(out))
			ok = false
		}
	}
	return ok
}

// try applies m, runs its test and restores the file.
func (r *runner) try(m mutant) (outcome string, took time.Duration, out string) {
	orig, err := os.ReadFile(m.file)
	if err != nil {
		return "ERROR", 0, err.Error()
	}
	r.mu.Lock()
	if r.saved == nil {
		r.saved = map[string][]byte{}
	}
	r.saved[m.file] = orig
	r.mu.Unlock()
	defer r.restore(m.file)
	mutated := bytes.Replace(orig, []byte(m.from), []byte(m.to), 1)
	if err := os.WriteFile(m.file, mutated, 0o644); err != nil {
		return "ERROR", 0, err.Error()
	}
	start := time.Now()
	out, err = r.exec(m.test)
	took = time.Since(start)
	switch {
	case err == nil:
		return "SURVIVED", took, out
	case strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]"):
		return "BUILD", took, out
	}
	return "killed", took, out
}

func (r *runner) exec(command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s", r.timeout)
	}
	return string(out), err
}

func (r *runner) restore(file string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.saved[file]; ok {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "mutants: RESTORE %s FAILED: %v (git checkout -- %s)\n", file, err, file)
		}
		delete(r.saved, file)
	}
}

func (r *runner) restoreAll() {
	r.mu.Lock()
	files := make([]string, 0, len(r.saved))
	for f := range r.saved {
		files = append(files, f)
	}
	r.mu.Unlock()
	for _, f := range files {
		r.restore(f)
	}
}

func without(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	ls := strings.Split(s, "\n")
	if len(ls) > 40 {
		ls = append(ls[:20], append([]string{"    …"}, ls[len(ls)-20:]...)...)
	}
	return "    " + strings.Join(ls, "\n    ")
}
