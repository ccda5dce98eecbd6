// Package dshimport imports DeepSeek Harness session logs into mull: `mull
// import dsh` reads a DSH home once, `mull serve --watch-dsh` keeps reading
// it as DSH writes. It finds <home>/sessions/**/session.jsonl[.zstd], opens
// them read-only, maps their rows with dshlog, and hands the events to an
// Ingester in batches with source "import".
//
// # How far each file was read
//
// A table (store.DSHImportFile) keeps, per file, the dshlog.Pos to resume
// at and the mapping state the next line needs (the turn in progress and the
// tool calls still waiting for their results). For a zstd log the position
// is the file offset of the frame holding the next unread line plus the
// decompressed bytes of that frame already read: frames are independent, so
// a resumed read decodes from that frame on and never the frames before it.
// The position is saved only after the batch read up to it was ingested, so
// a crash in between re-sends at most that one batch, whose events are then
// duplicates (ingest keys events by id). Unchanged files (same size and
// modification time) are not opened again.
//
// # What could not be imported
//
// A file's import is complete, waiting or incomplete (store.DSHImportFile
// State), kept on its row so every run says so, not only the one that saw
// it, and `mull sessions show` too:
//
//   - A half-written last line, or an incomplete last zstd frame, is where
//     reading stops for now. While the file's size or modification time
//     changed within Settle (import.settle), DSH is still writing it: the
//     file is waiting, and the next scan resumes there. Once it settled the
//     cut tail is an incomplete import, reported on every scan until the
//     tail parses (DSH, or someone, finished the file).
//   - A corrupt zstd frame is an error naming the file and the frame's byte
//     offset. zstd frames are independent, so reading resumes at the next
//     frame that decodes and the later frames' events are imported; the
//     frame stays on the file's row as damage (incomplete) until the file
//     is read again from its start.
//   - A corrupt line stops that file with an error naming the path and the
//     line; everything before it is imported, the other files are read as
//     usual, and the file is tried again on every scan.
//
// A file that got shorter than the saved position was replaced: it is read
// again from the start (its events are duplicates, and are skipped), its
// damage forgotten.
package dshimport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
)

// Source is the ingest source of imported events.
const Source = store.SourceImport

// DefaultBatchSize is how many events go to the ingester at most at once.
const DefaultBatchSize = 500

// Ingester stores a batch of events in one transaction. An event whose id
// is stored already is a duplicate, not an error. ingest.Service is the
// real one, through IngestFunc.
type Ingester interface {
	Ingest(ctx context.Context, batch []events.Event, source string) (stored, duplicates int, err error)
}

// IngestFunc makes a function an Ingester.
type IngestFunc func(ctx context.Context, batch []events.Event, source string) (stored, duplicates int, err error)

// Ingest calls f.
func (f IngestFunc) Ingest(ctx context.Context, batch []events.Event, source string) (int, int, error) {
	return f(ctx, batch, source)
}

// Importer reads the session logs of one DSH home.
type Importer struct {
	// Home is DSH's home: the logs are under Home/sessions.
	Home string
	// Store keeps how far each file was read.
	Store *store.Store
	// Ingester stores the events. Not needed for a DryRun.
	Ingester Ingester
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Progress, when set, is called after every batch and every file.
	Progress func(Progress)
	// BatchSize caps the events of one Ingest call. Defaults to 500.
	BatchSize int
	// DryRun reads and maps what is new but ingests nothing and records no
	// position.
	DryRun bool
	// Now is the clock events are validated against and files' ages are
	// measured with. Defaults to time.Now.
	Now func() time.Time

	// AnalyzeAfter is how many events one scan must store before it
	// refreshes the planner's statistics of the tables it filled
	// (store.Analyze, after the last batch committed): a large import
	// leaves the statistics describing the tables before it. 0 means
	// 1000, so a watch's small scans leave it to autovacuum; `mull import
	// dsh` sets 1. A negative one is refused.
	AnalyzeAfter int

	feedback feedbackMark // the message-feedback file as last read
	// Settle is import.settle: a file whose size or modification time
	// changed within it and that ends in a partial line or frame is waiting
	// (DSH is writing it); after it, incomplete. Defaults to 10s.
	Settle time.Duration
}

// DefaultSettle is import.settle's default.
const DefaultSettle = 10 * time.Second

// DefaultAnalyzeAfter is Importer.AnalyzeAfter's default.
const DefaultAnalyzeAfter = 1000

// Progress is how far a scan is.
type Progress struct {
	FilesDone  int `json:"files_done"`
	FilesTotal int `json:"files_total"`
	// Events is how many events were read so far; their total is not known
	// before every file is read, so BytesDone of BytesTotal (the unread
	// bytes of the files to read) says how far along the scan is.
	Events     int   `json:"events"`
	BytesDone  int64 `json:"bytes_done"`
	BytesTotal int64 `json:"bytes_total"`
}

// Summary is what a scan did.
type Summary struct {
	// Files is how many session logs were found; Read how many were read
	// (new, changed, or stopped by an error last time), Unchanged how many
	// were skipped as not written to since they were last read.
	Files     int `json:"files"`
	Read      int `json:"read"`
	Unchanged int `json:"unchanged"`
	// Waiting is how many end in a half-written line or zstd frame that DSH
	// is still writing (the file changed within Settle): read up to it, the
	// rest comes once DSH has written it.
	Waiting int `json:"waiting"`
	// Incomplete lists every log whose import is incomplete as of this scan,
	// read by it or not: a corrupt frame skipped, a line that stops the
	// reading, a tail cut short that settled. Each stays listed on every
	// scan until that is no longer so.
	Incomplete []FileIncomplete `json:"incomplete"`
	// Events were handed to the ingester; it stored Stored of them and
	// already had Duplicates.
	Events     int `json:"events"`
	Stored     int `json:"stored"`
	Duplicates int `json:"duplicates"`
	// Skipped events were mapped but fail events.Validate, or come from a
	// row that is not valid UTF-8; each is logged, and the first
	// MaxLeftOut are listed in LeftOut with their place.
	Skipped int       `json:"skipped"`
	LeftOut []LeftOut `json:"left_out,omitempty"`
	// Errors are the problems this scan ran into, each naming its file and
	// place: a corrupt frame (reading resumed past it), a corrupt line
	// (reading stopped there), a file that cannot be opened.
	Errors []FileError `json:"errors"`
}

// FileIncomplete is a log whose import is incomplete, and why.
type FileIncomplete struct {
	Path      string `json:"path"`
	SessionID string `json:"session_id,omitempty"`
	Reason    string `json:"reason"`
}

// String is the reason, led by the session and, unless the reason names
// it, the path.
func (f FileIncomplete) String() string {
	s := f.Reason
	if !strings.Contains(s, f.Path) {
		s = f.Path + ": " + s
	}
	if f.SessionID != "" {
		s = "session " + f.SessionID + ": " + s
	}
	return s
}

// FileError is a file the scan could not read to its end, and why.
type FileError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// String is the error, led by the path.
func (e FileError) String() string {
	if strings.HasPrefix(e.Error, e.Path) {
		return e.Error
	}
	return e.Path + ": " + e.Error
}

// MaxLeftOut bounds Summary.LeftOut; Skipped counts them all.
const MaxLeftOut = 100

// LeftOut is one event the import did not store, and where its row is. An
// event mull would refuse is left out whole, never cut or stored with its
// bad bytes replaced: what is stored is what DSH wrote.
type LeftOut struct {
	Path string `json:"path"`
	// Line is the row's line number (1-based); Offset the file offset of
	// the row (plain log) or of the zstd frame holding it.
	Line   int64  `json:"line"`
	Offset int64  `json:"offset"`
	ID     string `json:"id"`
	Type   string `json:"type"`
	Error  string `json:"error"`
}

func (l LeftOut) String() string {
	return fmt.Sprintf("%s: line %d (byte %d): event %s (%s) left out: %s", l.Path, l.Line, l.Offset, l.ID, l.Type, l.Error)
}

func (im *Importer) withDefaults() (*Importer, error) {
	c := *im
	if c.Store == nil {
		return nil, errors.New("dshimport: no store")
	}
	if c.Ingester == nil && !c.DryRun {
		return nil, errors.New("dshimport: no ingester")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	c.BatchSize = max(min(c.BatchSize, events.MaxBatch), 2)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Settle <= 0 {
		c.Settle = DefaultSettle
	}
	if c.AnalyzeAfter < 0 {
		return nil, fmt.Errorf("dshimport: AnalyzeAfter is %d: give a count of events (0 for the default, %d)", c.AnalyzeAfter, DefaultAnalyzeAfter)
	}
	if c.AnalyzeAfter == 0 {
		c.AnalyzeAfter = DefaultAnalyzeAfter
	}
	return &c, nil
}

// Scan reads what is new in every session log under the home once. It
// returns an error only when it cannot go on: no sessions directory, the
// database or the ingester failing. A file it cannot read is in
// Summary.Errors and does not stop the others.
func (im *Importer) Scan(ctx context.Context) (Summary, error) {
	c, err := im.withDefaults()
	if err != nil {
		return Summary{}, err
	}
	paths, walkErrs, err := FindLogs(c.Home)
	if err != nil {
		return Summary{}, err
	}
	s := &scan{Importer: c, sum: Summary{Files: len(paths), Errors: walkErrs}}
	if err := s.plan(ctx, paths); err != nil {
		return s.sum, err
	}
	for i := range s.files {
		if err := ctx.Err(); err != nil {
			return s.sum, err
		}
		if err := s.importFile(ctx, &s.files[i]); err != nil {
			return s.sum, err
		}
		s.progress.FilesDone++
		s.report()
	}
	if im.feedback, err = s.importFeedback(ctx, paths, im.feedback); err != nil {
		return s.sum, err
	}
	s.analyze(ctx)
	if s.sum.Errors == nil {
		s.sum.Errors = []FileError{}
	}
	if s.sum.Incomplete == nil {
		s.sum.Incomplete = []FileIncomplete{}
	}
	return s.sum, nil
}

// scan is one Scan's state.
type scan struct {
	*Importer
	files    []file
	sum      Summary
	progress Progress
}

// file is a log found, with what the table knows of it.
type file struct {
	path string
	info fs.FileInfo
	rec  store.DSHImportFile
	// known: the table has a row for it.
	known bool
}

// unchanged: read before, without error, and not written to since.
func (f *file) unchanged() bool {
	return f.known && f.rec.Error == "" && f.rec.Size == f.info.Size() && f.rec.ModTime.Equal(f.info.ModTime())
}

// plan stats every log and looks up how far each was read.
func (s *scan) plan(ctx context.Context, paths []string) error {
	known := map[string]store.DSHImportFile{}
	recs, err := s.Store.DSHImportFiles(ctx)
	if err != nil {
		return err
	}
	for _, r := range recs {
		known[r.Path] = r
	}
	for _, p := range paths {
		info, err := statFile(p)
		if err != nil {
			s.sum.Errors = append(s.sum.Errors, FileError{Path: p, Error: err.Error()})
			continue
		}
		rec, ok := known[p]
		f := file{path: p, info: info, rec: rec, known: ok}
		if !f.unchanged() {
			s.progress.BytesTotal += info.Size() - f.from().Offset
		}
		s.files = append(s.files, f)
	}
	s.progress.FilesTotal = len(paths)
	s.progress.FilesDone = len(paths) - len(s.files) // the ones that could not be stat'ed
	return nil
}

// analyze refreshes the statistics of the tables a large scan filled. A
// failure is logged, not returned: the events are stored, and autovacuum
// analyzes them later anyway.
func (s *scan) analyze(ctx context.Context) {
	if s.DryRun || s.sum.Stored < s.AnalyzeAfter {
		return
	}
	if err := s.Store.Analyze(ctx, store.ImportTables...); err != nil {
		s.Logger.Warn("DSH import: the tables' statistics were not refreshed; autovacuum will", "error", err.Error())
	}
}

func (s *scan) report() {
	if s.Progress != nil {
		s.Progress(s.progress)
	}
}

func (s *scan) fileError(f *file, err error) {
	s.sum.Errors = append(s.sum.Errors, FileError{Path: f.path, Error: err.Error()})
}

// recent says whether the file changed within Settle: its modification
// time is that recent (or in the future), or its size differs from a look
// taken that recently.
func (s *scan) recent(f *file) bool {
	now := s.Now()
	if now.Sub(f.info.ModTime()) < s.Settle {
		return true
	}
	since := now.Sub(f.rec.UpdatedAt)
	return f.known && f.rec.Size != f.info.Size() && since >= 0 && since < s.Settle
}

// account adds a file's state, once it is known for this scan, to the
// summary.
func (s *scan) account(rec store.DSHImportFile) {
	if rec.Tail != "" && rec.Waiting {
		s.sum.Waiting++
	}
	if st, why := rec.State(); st == store.ImportIncomplete {
		s.sum.Incomplete = append(s.sum.Incomplete, FileIncomplete{Path: rec.Path, SessionID: rec.SessionID, Reason: why})
	}
}

// ingest hands a batch to the ingester. A batch the ingester refuses as
// invalid is that file's problem; any other failure stops the scan.
func (s *scan) ingest(ctx context.Context, batch []events.Event) (fileErr, err error) {
	if s.DryRun {
		return nil, nil
	}
	stored, dups, err := s.Ingester.Ingest(ctx, batch, Source)
	var fe *events.FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("ingest refused the events: %w", err), nil
	}
	if err != nil {
		return nil, fmt.Errorf("dshimport: ingest: %w", err)
	}
	s.sum.Stored += stored
	s.sum.Duplicates += dups
	return nil, nil
}
