package ledger

import (
	"fmt"
	"strings"

	"github.com/mullhq/mull/learn/trust"
)

// StderrMax is how much of a failed command's stderr the seed keeps as the
// outcome's signature, in characters.
const StderrMax = 200

// ellipsis ends a cut preview, as the seed's commandPreview does.
const ellipsis = "…"

// Preview is a command as model-facing text, the seed's commandPreview:
// sanitized, and cut to PreviewMax runes plus "…" when longer. It is not
// gated: GatedPreview is what a fact stores.
func Preview(commandLine string) string {
	return cut(Sanitize(commandLine), PreviewMax)
}

// GatedPreview is the preview a fact stores: the whole sanitized command
// through the trust gate first (so a credential straddling the cut is
// still redacted whole), then cut like Preview. A command the gate
// refuses (it reads like an instruction) has no preview: "".
func GatedPreview(commandLine string) string {
	v := trust.Check(Sanitize(strings.TrimSpace(commandLine)))
	if v.Quarantined {
		return ""
	}
	return cut(Sanitize(v.Text), PreviewMax)
}

// CommandClaim is a failed command's claim, the seed's
// `command exited N (tool)`. It never holds the command itself.
func CommandClaim(exitCode int, tool string) string {
	return fmt.Sprintf("command exited %d (%s)", exitCode, Sanitize(strings.TrimSpace(tool)))
}

// FileClaim is a missing file's claim, the seed's
// `file does not exist: <path>`, the path sanitized.
func FileClaim(p string) string {
	return "file does not exist: " + Sanitize(p)
}

// withheldPath replaces a path the trust gate refuses in a claim.
const withheldPath = "(path withheld by the trust gate)"

// GatedFileClaim is the claim a file fact stores: FileClaim through the
// trust gate, credentials redacted; a path the gate refuses is withheld
// (the fingerprint still matches it; only the text shown changes).
func GatedFileClaim(p string) string {
	v := trust.Check(FileClaim(p))
	if v.Quarantined {
		return FileClaim(withheldPath)
	}
	return trust.OneLine(v.Text)
}

// StderrSignature is a failed command's stderr as the seed keeps it: the
// first StderrMax characters, sanitized, with no ellipsis.
func StderrSignature(stderr string) string {
	return cutRunes(Sanitize(stderr), StderrMax)
}

// gateWindow is how much stderr the gate reads before the cut: enough
// that a credential straddling character 200 is redacted whole.
const gateWindow = 4 * StderrMax

// GatedStderrSignature is the signature a fact stores: the head of stderr
// through the trust gate (credentials redacted), then StderrSignature.
// Stderr the gate refuses is not kept: "".
func GatedStderrSignature(stderr string) string {
	head := cutRunes(stderr, gateWindow)
	v := trust.Check(Sanitize(head))
	if v.Quarantined {
		return ""
	}
	return cutRunes(Sanitize(v.Text), StderrMax)
}

// cut is s when it has at most n runes, else its first n runes and "…".
func cut(s string, n int) string {
	if c := cutRunes(s, n); c != s {
		return c + ellipsis
	}
	return s
}

// cutRunes is the first n runes of s.
func cutRunes(s string, n int) string {
	i := 0
	for at := range s {
		if i == n {
			return s[:at]
		}
		i++
	}
	return s
}
