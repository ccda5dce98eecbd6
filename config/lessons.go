package config

import "cmp"

// Lessons configures how structured lessons (kinds lesson, directive,
// failure) reach the digest.
type Lessons struct {
	// CommitEvery is the seed's commitEvery: the digest is republished
	// once this many lesson changes (a new lesson, or one leaving force:
	// superseded, deprecated, deleted) wait behind its watermark. Until
	// then each new lesson is an instant notice and the digest text, and
	// so DSH's cached prompt, stays byte-identical. It counts apart from
	// digest.watermark_items, which counts every other memory; whichever
	// count fills first publishes, and digest.watermark_age applies to the
	// oldest unpublished change of either. Defaults to 8.
	// Env: MULL_LESSONS_COMMIT_EVERY.
	CommitEvery int `toml:"commit_every"`
}

func (l Lessons) withDefaults() Lessons {
	l.CommitEvery = cmp.Or(l.CommitEvery, 8)
	return l
}

func (l Lessons) validate() error {
	if l.CommitEvery < 1 || l.CommitEvery > 1000 {
		return bad("lessons.commit_every", "must be between 1 and 1000 lesson changes, got %d", l.CommitEvery)
	}
	return nil
}
