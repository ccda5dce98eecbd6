package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
)

// CommandFingerprint is a command call's fingerprint, the seed's
// {tool, commandLine, cwd}. The command line is trimmed only: inner
// whitespace is kept, since `printf "a  b"` and `printf "a b"` are
// different programs. The cwd is the effective one the command runs in:
// workdir when the call sets it, else the session's cwd; a relative
// workdir is joined onto cwd (bash runs `cd workdir` from the session's
// cwd), so `workdir: "sub"` and `workdir: "/repo/sub"` are one action.
func CommandFingerprint(tool, commandLine, workdir, cwd string) Fingerprint {
	return Fingerprint{
		Kind:        CommandFailed,
		Tool:        strings.TrimSpace(tool),
		CommandLine: strings.TrimSpace(commandLine),
		Cwd:         EffectiveCwd(workdir, cwd),
	}
}

// EffectiveCwd is where a command runs: workdir if set (joined onto cwd
// when relative), else cwd. Both are trimmed; nothing else is rewritten,
// so an absolute workdir is kept as given.
func EffectiveCwd(workdir, cwd string) string {
	workdir, cwd = strings.TrimSpace(workdir), strings.TrimSpace(cwd)
	switch {
	case workdir == "":
		return cwd
	case isAbs(workdir) || cwd == "":
		return workdir
	default:
		return join(cwd, workdir)
	}
}

// FileFingerprint is a read call's fingerprint, the seed's {path, cwd}:
// the path as the model gave it (control characters replaced, as the seed
// does), scoped by the session's cwd so the same relative path in two
// projects is two facts.
func FileFingerprint(p, cwd string) Fingerprint {
	return Fingerprint{Kind: FileMissing, Path: Sanitize(p), Cwd: strings.TrimSpace(cwd)}
}

// Key is the fingerprint's canonical form, the seed's fingerprintKey:
// JSON with sorted keys, empty fields left out. Kind is not part of it
// (the store keeps kind in its own column). HTML characters are not
// escaped, so the key is byte for byte what JavaScript's JSON.stringify
// gives for the same object.
func (f Fingerprint) Key() string {
	m := map[string]string{}
	for name, v := range f.fields() {
		if v != "" {
			m[name] = v
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(m) // a map of strings always encodes; keys come out sorted
	return strings.TrimSuffix(b.String(), "\n")
}

// fields are the fingerprint's fields by their JSON names, without kind.
func (f Fingerprint) fields() map[string]string {
	return map[string]string{
		"tool": f.Tool, "commandLine": f.CommandLine, "path": f.Path,
		"cwd": f.Cwd, "taskHash": f.TaskHash, "endpoint": f.Endpoint,
	}
}

// requiredFields are the fields each kind needs; every other field must
// be empty.
var requiredFields = map[Kind][]string{
	CommandFailed:    {"tool", "commandLine", "cwd"},
	FileMissing:      {"path", "cwd"},
	ApproachRejected: {"taskHash"},
	APIUnavailable:   {"endpoint"},
}

// Validate says what is wrong with a fingerprint: an unknown kind, a
// field its kind needs left empty, or a field of another kind set. The
// error names the field as the JSON names it ("fingerprint.commandLine").
func (f Fingerprint) Validate() error {
	need, ok := requiredFields[f.Kind]
	if !ok {
		return fmt.Errorf("fingerprint.kind: %q is not one of command_failed, file_missing, approach_rejected, api_unavailable", f.Kind)
	}
	fields := f.fields()
	for _, name := range need {
		if strings.TrimSpace(fields[name]) == "" {
			return fmt.Errorf("fingerprint.%s: required for a %s fact", name, f.Kind)
		}
	}
	for _, name := range []string{"tool", "commandLine", "path", "cwd", "taskHash", "endpoint"} {
		if fields[name] != "" && !slices.Contains(need, name) {
			return fmt.Errorf("fingerprint.%s: not a field of a %s fact", name, f.Kind)
		}
	}
	return nil
}

// ObservationKey is the key a model path's file state is kept under, the
// seed's scopedModelKey: cwd + "\x00" + path, so a relative path in one
// project never witnesses another's; with no cwd, the path alone. Both are
// sanitized (no control characters), so the NUL is unambiguous.
func ObservationKey(cwd, p string) string {
	cwd, p = Sanitize(strings.TrimSpace(cwd)), Sanitize(p)
	if cwd == "" {
		return p
	}
	return cwd + "\x00" + p
}

// FileKeys are every key one file's state is kept under, and so the keys
// a file_missing fact's absent preconditions name: the model path scoped
// by cwd (ObservationKey), the path resolved against cwd when that gives
// an absolute path (an absolute model path is its own key), and the
// display paths DSH reported for it, each as given and resolved. A file
// observed under any of them witnesses the same fact: an fs/observed event
// carrying only DSH's displayPath, say from a write with another spelling
// of the path, still stales the fact. A resolved path is in one spelling
// (ResolvedPath): a Windows path's separators are forward slashes and its
// drive letter upper case, so pwsh's `C:\p\a.txt` and a read of `a.txt` in
// `c:\p` share the key `C:/p/a.txt`. Keys are distinct, in that order.
func FileKeys(cwd, p string, display ...string) []string {
	var keys []string
	add := func(k string) {
		if k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if p != "" {
		add(ObservationKey(cwd, p))
		add(ResolvedPath(Sanitize(strings.TrimSpace(cwd)), Sanitize(p)))
	}
	for _, d := range display {
		d = Sanitize(d)
		add(d)
		add(ResolvedPath("", d))
	}
	return keys
}

// DisplayKey is a file key as a person reads it: the path part of a
// scoped key, the key itself otherwise.
func DisplayKey(key string) string {
	if _, p, ok := strings.Cut(key, "\x00"); ok {
		return p
	}
	return key
}

// ResolvedPath is p as an absolute path in one spelling, joined onto cwd
// when relative; empty when neither is absolute. A slash path is cleaned
// (path.Clean). A Windows path (a drive path, a UNC or backslash-rooted
// path, or a relative path under such a cwd) has its backslashes turned
// into slashes, is cleaned, and its drive letter upper-cased, since
// Windows paths are case-insensitive there and DSH may report either
// separator. A backslash in a POSIX path is a file name character and is
// kept.
func ResolvedPath(cwd, p string) string {
	cwd, p = strings.TrimSpace(cwd), strings.TrimSpace(p)
	switch {
	case p == "":
		return ""
	case strings.HasPrefix(p, "/"):
		return path.Clean(p)
	case isWindowsAbs(p):
		return windowsSlash(p)
	case strings.HasPrefix(cwd, "/"):
		return path.Join(cwd, p)
	case isWindowsAbs(cwd):
		return windowsSlash(cwd + `\` + p)
	}
	return ""
}

// isWindowsAbs: a drive path (C:\ or C:/) or a UNC or backslash-rooted
// path.
func isWindowsAbs(p string) bool {
	return strings.HasPrefix(p, `\`) || isDrive(p)
}

func isDrive(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') && unicode.IsLetter(rune(p[0]))
}

// windowsSlash is a Windows path with forward slashes, cleaned, its drive
// letter upper case; ".." never climbs above the drive or a UNC path's
// "//".
func windowsSlash(p string) string {
	s := strings.ReplaceAll(p, `\`, "/")
	switch {
	case isDrive(s):
		return strings.ToUpper(s[:1]) + ":" + path.Clean(s[2:])
	case strings.HasPrefix(s, "//"):
		return "/" + path.Clean(s[1:])
	}
	return path.Clean(s) // backslash-rooted: the current drive's root
}

// isAbs: a slash path, a UNC or backslash-rooted path, or a drive path.
func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || isWindowsAbs(p)
}

// join puts a relative dir under cwd, with the separator cwd uses.
func join(cwd, dir string) string {
	if strings.Contains(cwd, `\`) && !strings.Contains(cwd, "/") {
		return strings.TrimRight(cwd, `\`) + `\` + dir
	}
	return path.Join(cwd, dir)
}

// Sanitize replaces every control character with a space, the seed's
// sanitize (which replaces U+0000–U+001F and U+007F), extended to the C1
// controls U+0080–U+009F: text shown to a model never carries a byte that
// breaks a message's structure or hides what follows.
func Sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
