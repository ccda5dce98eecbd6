package retro

import "unicode/utf8"

// IncompleteNote leads the excerpt of a session whose import from DSH's
// log is incomplete: a corrupt frame was skipped, or the log is cut short
// and no longer written. Such a log will not get better by waiting, and its
// failure is often the lesson, so its retro runs, but the model is told
// that events are missing, so that it does not take the missing part for
// what happened (a failure whose fix was lost, a task that looks abandoned).
// Fixed text: nothing of the log (paths, decoder errors) reaches the prompt.
const IncompleteNote = "[mull: this session's DSH log could not be read whole (damaged or cut short), " +
	"so some of its events are missing. Do not conclude anything from what is absent: a failure below " +
	"may have been fixed, or the task finished, in the missing part.]\n"

// NoteIncomplete leads an excerpt with IncompleteNote when the session's
// import is incomplete.
func NoteIncomplete(excerpt string, incomplete bool) string {
	if !incomplete {
		return excerpt
	}
	return IncompleteNote + excerpt
}

// CapsWithNote is caps with room left for IncompleteNote when the excerpt
// gets it, so the note and the excerpt together stay within MaxChars.
func CapsWithNote(caps Caps, incomplete bool) Caps {
	caps = caps.WithDefaults()
	if incomplete {
		caps.MaxChars = max(caps.MaxChars-utf8.RuneCountInString(IncompleteNote), 1)
	}
	return caps
}
