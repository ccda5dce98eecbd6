package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// routesAsOf mounts "as of T": what the agent believed at a moment, and
// what changed between two.
func (p *Panel) routesAsOf() {
	p.get("/asof", p.asOf)
}

// asofPer is the length of a page of memories in force; asofDiffMax caps
// each side of a diff.
const (
	asofPer     = 50
	asofDiffMax = 500
)

type asofView struct {
	// Workspace is the form's value (globalLibrary for the global
	// library); Set says one was picked.
	Workspace string
	Set       bool
	// At and Vs are the times (Vs zero: no diff); AtInput and VsInput the
	// form's values.
	At, Vs           time.Time
	AtInput, VsInput string
	Libraries        []store.LibraryCount
	// Libs are the libraries the workspace reads (its digest's).
	Libs    []string
	Digest  memories.DigestAsOf
	InForce []store.Memory
	Pager   Pager
	// Diff: From is the earlier time, To the later.
	Diff *asofDiff
}

type asofDiff struct {
	From, To       time.Time
	Added, Removed []store.Memory
	// Capped: a side hit asofDiffMax.
	Capped     bool
	FromDigest memories.DigestAsOf
	ToDigest   memories.DigestAsOf
	Lines      []DiffLine
	Changed    bool
}

func (p *Panel) asOf(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	now := p.deps.Now().UTC()
	v := asofView{Workspace: q.Get("workspace"), AtInput: q.Get("at"), VsInput: q.Get("vs"), Pager: pager(r, asofPer)}
	var err error
	if v.At, err = parseWhen("at", v.AtInput, now); err != nil {
		return err
	}
	if v.VsInput != "" {
		if v.Vs, err = parseWhen("vs", v.VsInput, now); err != nil {
			return err
		}
	}
	v.AtInput, v.VsInput = inputTime(v.At), inputTime(v.Vs)
	s := p.deps.Store
	if v.Libraries, err = s.MemoryLibraries(r.Context(), s.DB, 500); err != nil {
		return err
	}
	var ws string
	ws, v.Set = libraryParam(v.Workspace)
	if !v.Set || p.deps.Memories == nil {
		return p.page(w, r, "asof", "asof", "As of T", v)
	}
	if err := p.asofFill(r, ws, &v); err != nil {
		return err
	}
	return p.page(w, r, "asof", "asof", "As of T", v)
}

func (p *Panel) asofFill(r *http.Request, ws string, v *asofView) error {
	ctx, s, mem := r.Context(), p.deps.Store, p.deps.Memories
	v.Libs = mem.Libraries(ws)
	var err error
	if v.Digest, err = mem.DigestAsOf(ctx, ws, v.At); err != nil {
		return err
	}
	if v.InForce, err = s.MemoriesInForce(ctx, s.DB, v.Libs, v.At, v.Pager.Limit(), v.Pager.Offset()); err != nil {
		return err
	}
	v.InForce = v.InForce[:v.Pager.Trim(len(v.InForce))]
	if v.Vs.IsZero() {
		return nil
	}
	d := &asofDiff{From: v.At, To: v.Vs}
	if d.To.Before(d.From) {
		d.From, d.To = d.To, d.From
	}
	if d.Added, d.Removed, err = s.MemoriesInForceChanged(ctx, s.DB, v.Libs, d.From, d.To, asofDiffMax); err != nil {
		return err
	}
	d.Capped = len(d.Added) == asofDiffMax || len(d.Removed) == asofDiffMax
	// One side of the comparison is At, whose digest is already built.
	d.FromDigest, d.ToDigest = v.Digest, v.Digest
	other := &d.ToDigest
	if d.From.Equal(v.Vs) {
		other = &d.FromDigest
	}
	if !v.Vs.Equal(v.At) {
		if *other, err = mem.DigestAsOf(ctx, ws, v.Vs); err != nil {
			return err
		}
	}
	d.Lines = lineDiff(d.FromDigest.Text, d.ToDigest.Text)
	d.Changed = d.FromDigest.Text != d.ToDigest.Text
	v.Diff = d
	return nil
}

// parseWhen reads a time of the form: RFC 3339, or a datetime-local
// input's value (read as UTC); empty is now.
func parseWhen(field, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return now, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, Errorf(http.StatusBadRequest, "%s: %q is not a time: give RFC 3339 (2026-12-06T07:00:00Z) or pick one in the form (UTC)", field, s)
}

// inputTime is t as a datetime-local input's value, to the second, UTC
// ("" for zero).
func inputTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05")
}
