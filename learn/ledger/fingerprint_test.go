package ledger

import (
	"slices"
	"strings"
	"testing"
)

func TestCommandFingerprintTrimsOnly(t *testing.T) {
	// The seed's D7: trim, never collapse inner whitespace.
	for _, tc := range []struct{ in, want string }{
		{"  npm   install --force  ", "npm   install --force"},
		{"printf \"a  b\"", "printf \"a  b\""},
		{"\tnpm test\n", "npm test"},
	} {
		if got := CommandFingerprint("bash", tc.in, "", "/repo").CommandLine; got != tc.want {
			t.Errorf("CommandFingerprint(%q).CommandLine = %q, want %q", tc.in, got, tc.want)
		}
	}
	spaced := CommandFingerprint("bash", `printf "a  b"`, "", "/repo").Key()
	collapsed := CommandFingerprint("bash", `printf "a b"`, "", "/repo").Key()
	if spaced == collapsed {
		t.Errorf("printf \"a  b\" and printf \"a b\" share key %s", spaced)
	}
	if a, b := CommandFingerprint("bash", "  npm   install  ", "", "/repo").Key(), CommandFingerprint("bash", "npm   install", "", "/repo").Key(); a != b {
		t.Errorf("trimmed command keys differ: %s vs %s", a, b)
	}
	if a, b := CommandFingerprint("bash", "ls", "", "/r").Key(), CommandFingerprint("pwsh", "ls", "", "/r").Key(); a == b {
		t.Errorf("bash and pwsh share a key: %s", a)
	}
}

func TestEffectiveCwd(t *testing.T) {
	for _, tc := range []struct{ workdir, cwd, want string }{
		{"", "/project-a", "/project-a"},
		{"/other", "/project-a", "/other"},
		{"sub", "/project-a", "/project-a/sub"},
		{"./sub/../lib", "/project-a", "/project-a/lib"},
		{"sub", "", "sub"},
		{" /x ", "/y", "/x"},
		{`sub`, `C:\work`, `C:\work\sub`},
		{`D:\other`, `C:\work`, `D:\other`},
		{"", "", ""},
	} {
		if got := EffectiveCwd(tc.workdir, tc.cwd); got != tc.want {
			t.Errorf("EffectiveCwd(%q, %q) = %q, want %q", tc.workdir, tc.cwd, got, tc.want)
		}
	}
	if got := CommandFingerprint("bash", "ls", "sub", "/p").Cwd; got != "/p/sub" {
		t.Errorf("relative workdir: cwd %q", got)
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		fp   Fingerprint
		want string
	}{
		{"command", CommandFingerprint("bash", "npm install", "", "/repo"), `{"commandLine":"npm install","cwd":"/repo","tool":"bash"}`},
		{"file", FileFingerprint("x.txt", "/ws"), `{"cwd":"/ws","path":"x.txt"}`},
		{"empty fields left out", Fingerprint{Kind: FileMissing, Path: "/x.txt"}, `{"path":"/x.txt"}`},
		{"no html escaping", CommandFingerprint("bash", "a && b > c", "", "/r"), `{"commandLine":"a && b > c","cwd":"/r","tool":"bash"}`},
		{"api", Fingerprint{Kind: APIUnavailable, Endpoint: "https://api.example.test"}, `{"endpoint":"https://api.example.test"}`},
		{"approach", Fingerprint{Kind: ApproachRejected, TaskHash: "t1"}, `{"taskHash":"t1"}`},
	} {
		if got := tc.fp.Key(); got != tc.want {
			t.Errorf("%s: Key() = %s, want %s", tc.name, got, tc.want)
		}
	}
	// Kind is its own column: not in the key.
	if k := CommandFingerprint("bash", "x", "", "/c").Key(); strings.Contains(k, "kind") {
		t.Errorf("key holds kind: %s", k)
	}
	// The seed's cwd scoping: identical relative paths in two projects differ.
	if FileFingerprint("config.json", "/project-a").Key() == FileFingerprint("config.json", "/project-b").Key() {
		t.Error("config.json in two projects shares a key")
	}
}

func TestFileFingerprintSanitizes(t *testing.T) {
	if got := FileFingerprint("a\nb\x00c.txt", "/ws").Path; got != "a b c.txt" {
		t.Errorf("path %q", got)
	}
}

func TestValidateFingerprint(t *testing.T) {
	for _, tc := range []struct {
		name string
		fp   Fingerprint
		want string // "" = valid
	}{
		{"command", CommandFingerprint("bash", "ls", "", "/r"), ""},
		{"file", FileFingerprint("x", "/r"), ""},
		{"api", Fingerprint{Kind: APIUnavailable, Endpoint: "e"}, ""},
		{"approach", Fingerprint{Kind: ApproachRejected, TaskHash: "h"}, ""},
		{"unknown kind", Fingerprint{Kind: "command"}, "fingerprint.kind"},
		{"no tool", Fingerprint{Kind: CommandFailed, CommandLine: "ls", Cwd: "/r"}, "fingerprint.tool: required"},
		{"blank command", Fingerprint{Kind: CommandFailed, Tool: "bash", CommandLine: "  ", Cwd: "/r"}, "fingerprint.commandLine: required"},
		{"no cwd", Fingerprint{Kind: CommandFailed, Tool: "bash", CommandLine: "ls"}, "fingerprint.cwd: required"},
		{"no path", Fingerprint{Kind: FileMissing, Cwd: "/r"}, "fingerprint.path: required"},
		{"foreign field", Fingerprint{Kind: FileMissing, Path: "x", Cwd: "/r", Tool: "bash"}, "fingerprint.tool: not a field of a file_missing fact"},
		{"no endpoint", Fingerprint{Kind: APIUnavailable}, "fingerprint.endpoint: required"},
		{"no task hash", Fingerprint{Kind: ApproachRejected}, "fingerprint.taskHash: required"},
	} {
		err := tc.fp.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestObservationKeys(t *testing.T) {
	if got := ObservationKey("/ws", "x.txt"); got != "/ws\x00x.txt" {
		t.Errorf("ObservationKey = %q", got)
	}
	if got := ObservationKey("", "/x.txt"); got != "/x.txt" {
		t.Errorf("no cwd: %q", got)
	}
	// The seed's case: model path scoped by cwd, plus the display path.
	got := FileKeys("/ws", "x.txt", "/abs/workspace/x.txt")
	want := []string{"/ws\x00x.txt", "/ws/x.txt", "/abs/workspace/x.txt"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("FileKeys = %q, want %q", got, want)
	}
	// An absolute model path is its own key, and equal keys are listed once.
	got = FileKeys("/ws", "/ws/x.txt", "/ws/x.txt")
	want = []string{"/ws\x00/ws/x.txt", "/ws/x.txt"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("FileKeys abs = %q, want %q", got, want)
	}
	if got := FileKeys("", "rel.txt"); len(got) != 1 || got[0] != "rel.txt" {
		t.Errorf("FileKeys no cwd = %q", got)
	}
	if got := DisplayKey("/ws\x00x.txt"); got != "x.txt" {
		t.Errorf("DisplayKey = %q", got)
	}
}

func TestSanitize(t *testing.T) {
	// The seed's recording case: 'boom\nline2\u0000tail' → 'boom line2 tail'.
	if got := Sanitize("boom\nline2\u0000tail"); got != "boom line2 tail" {
		t.Errorf("Sanitize = %q", got)
	}
	if got := Sanitize("a\x1fb\x7fc\u0085d\te"); got != "a b c d e" {
		t.Errorf("Sanitize controls = %q", got)
	}
	if got := Sanitize("ünï ✓"); got != "ünï ✓" {
		t.Errorf("Sanitize changed printable text: %q", got)
	}
}

func TestResolvedPath(t *testing.T) {
	for _, tc := range []struct{ cwd, p, want string }{
		{"/ws", "x.txt", "/ws/x.txt"},
		{"/ws", "./src/../x.txt", "/ws/x.txt"},
		{"/ws", "/abs//x.txt", "/abs/x.txt"},
		{"", "/abs/x.txt", "/abs/x.txt"},
		{"", "rel.txt", ""},
		{"rel", "x.txt", ""},
		// Windows: one spelling, forward slashes, drive upper case.
		{`C:\p`, "a.txt", "C:/p/a.txt"},
		{`c:\p`, `sub\a.txt`, "C:/p/sub/a.txt"},
		{`C:\p\`, `..\q\a.txt`, "C:/q/a.txt"},
		{"", `C:\p\a.txt`, "C:/p/a.txt"},
		{"", `c:/p/a.txt`, "C:/p/a.txt"},
		{"/ws", `D:\other\a.txt`, "D:/other/a.txt"},
		{"", `C:\..\..\a.txt`, "C:/a.txt"},
		{"", `\\srv\share\a.txt`, "//srv/share/a.txt"},
		{`\\srv\share`, `..\..\a.txt`, "//a.txt"},
		// A backslash in a POSIX name is a character, not a separator.
		{"/ws", `a\b.txt`, `/ws/a\b.txt`},
		{"/ws", "", ""},
	} {
		if got := ResolvedPath(tc.cwd, tc.p); got != tc.want {
			t.Errorf("ResolvedPath(%q, %q) = %q, want %q", tc.cwd, tc.p, got, tc.want)
		}
	}
}

// The keys a read's fact is witnessed under and the keys an fs
// observation is stored under meet, whichever spelling each side has.
func TestFileKeysMeet(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cwd, p   string   // the read (model path, session cwd)
		fsModel  string   // the fs observation's model path (with the same cwd)
		fsDisp   string   // and its display path
		meet     bool     // some key in common
		wantKeys []string // the read's keys, when given
	}{
		{name: "posix display", cwd: "/w", p: "src/a.go", fsDisp: "/w/src/a.go", meet: true,
			wantKeys: []string{"/w\x00src/a.go", "/w/src/a.go"}},
		{name: "posix model only", cwd: "/w", p: "src/a.go", fsModel: "src/a.go", meet: true},
		{name: "posix other file", cwd: "/w", p: "src/a.go", fsDisp: "/w/src/b.go"},
		{name: "posix other project", cwd: "/w", p: "src/a.go", fsDisp: "/v/src/a.go"},
		{name: "windows display", cwd: `C:\p`, p: "a.txt", fsDisp: `C:\p\a.txt`, meet: true,
			wantKeys: []string{"C:\\p\x00a.txt", "C:/p/a.txt"}},
		{name: "windows display, slashes", cwd: `C:\p`, p: "a.txt", fsDisp: "C:/p/a.txt", meet: true},
		{name: "windows display, drive case", cwd: `c:\p`, p: `sub\a.txt`, fsDisp: `C:\p\sub\a.txt`, meet: true},
		{name: "windows absolute model path", cwd: `C:\p`, p: `C:\p\a.txt`, fsDisp: `c:/p/a.txt`, meet: true},
		{name: "windows model only", cwd: `C:\p`, p: "a.txt", fsModel: "a.txt", meet: true},
		{name: "windows other drive", cwd: `C:\p`, p: "a.txt", fsDisp: `D:\p\a.txt`},
	} {
		read := FileKeys(tc.cwd, tc.p)
		if tc.wantKeys != nil && strings.Join(read, "|") != strings.Join(tc.wantKeys, "|") {
			t.Errorf("%s: read keys %q, want %q", tc.name, read, tc.wantKeys)
		}
		fs := FileKeys(tc.cwd, tc.fsModel, tc.fsDisp)
		meet := false
		for _, k := range fs {
			meet = meet || slices.Contains(read, k)
		}
		if meet != tc.meet {
			t.Errorf("%s: read keys %q and fs keys %q meet = %v, want %v", tc.name, read, fs, meet, tc.meet)
		}
	}
	// A display path is kept as given too (command_dependencies name
	// files that way) and then in its resolved spelling.
	if got := FileKeys("", "", `C:\p\Makefile`); strings.Join(got, "|") != `C:\p\Makefile|C:/p/Makefile` {
		t.Errorf("display keys = %q", got)
	}
}
