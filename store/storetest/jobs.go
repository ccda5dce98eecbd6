package storetest

import (
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/store"
)

// Job is one River job a test moves through River's own transitions
// (the driver's, as a producer and its completer make them) without a
// worker working it: for what must hold while a job runs, and stop
// holding once it is done or on its next attempt.
type Job struct {
	t   testing.TB
	s   *store.Store
	now time.Time
	// Row is the job as its current attempt started, as River hands it
	// to a worker (attempt, attempted_at).
	Row *rivertype.JobRow
}

// StartJob inserts a job of kind, with 3 attempts, on a queue of its own,
// and starts its first attempt: the job is running, attempt 1.
func StartJob(t testing.TB, s *store.Store, kind string) *Job {
	t.Helper()
	j := &Job{t: t, s: s, now: time.Now().UTC().Truncate(time.Millisecond)}
	queue := "storetest_" + randomHex(4)
	_, err := s.Driver().GetExecutor().JobInsertFull(t.Context(), &riverdriver.JobInsertFullParams{
		Kind: kind, Queue: queue, EncodedArgs: []byte("{}"), Metadata: []byte("{}"), MaxAttempts: 3, Priority: 1,
		State: rivertype.JobStateAvailable, ScheduledAt: &j.now, CreatedAt: &j.now})
	if err != nil {
		t.Fatalf("storetest: insert a %s job: %v", kind, err)
	}
	j.start(queue)
	return j
}

// start starts the next attempt of the job, the only one in its queue, a
// second after the last one began (so its attempted_at differs, at
// SQLite's millisecond).
func (j *Job) start(queue string) {
	j.t.Helper()
	j.now = j.now.Add(time.Second)
	res, err := j.s.Driver().GetExecutor().JobGetAvailable(j.t.Context(), &riverdriver.JobGetAvailableParams{
		ClientID: "storetest", MaxAttemptedBy: 100, MaxToLock: 1, Now: &j.now, Queue: queue})
	if err != nil || len(res.Jobs) != 1 {
		j.t.Fatalf("storetest: start an attempt on %s: %+v %v", queue, res, err)
	}
	j.Row = res.Jobs[0]
}

// Complete completes the running attempt.
func (j *Job) Complete() {
	j.t.Helper()
	j.set(riverdriver.JobSetStateCompleted(j.Row.ID, j.now, nil))
}

// Retry fails the running attempt, as a worker's error does, and starts
// the next: the job runs again, its attempt one more.
func (j *Job) Retry() {
	j.t.Helper()
	j.set(riverdriver.JobSetStateErrorAvailable(j.Row.ID, j.now, []byte(`{"error":"storetest: retry"}`), nil))
	j.start(j.Row.Queue)
}

// Snooze snoozes the running attempt, which gives its attempt back, and
// starts the job again: running under the same attempt number, started
// later.
func (j *Job) Snooze() {
	j.t.Helper()
	j.set(riverdriver.JobSetStateSnoozedAvailable(j.Row.ID, j.now, j.Row.Attempt-1, nil))
	j.start(j.Row.Queue)
}

func (j *Job) set(p *riverdriver.JobSetStateIfRunningParams) {
	j.t.Helper()
	rows, err := j.s.Driver().GetExecutor().JobSetStateIfRunningMany(j.t.Context(), &riverdriver.JobSetStateIfRunningManyParams{
		ID: []int64{p.ID}, Attempt: []*int{p.Attempt}, ErrData: [][]byte{p.ErrData}, FinalizedAt: []*time.Time{p.FinalizedAt},
		MetadataDoMerge: []bool{p.MetadataDoMerge}, MetadataUpdates: [][]byte{p.MetadataUpdates}, Now: &j.now,
		ScheduledAt: []*time.Time{p.ScheduledAt}, State: []rivertype.JobState{p.State}})
	if err != nil || len(rows) != 1 || rows[0].State != p.State {
		j.t.Fatalf("storetest: set job %d %s: %+v %v", p.ID, p.State, rows, err)
	}
}
