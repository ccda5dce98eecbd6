package tasks_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/tasks"
)

// In both mode the close enqueues the job and answers with the material;
// the job and the agent race, and exactly one reflection stands.
func TestBothModeOneReflectionWins(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, func(c *config.Config) { c.Reflection.Mode = config.ReflectBoth })
		f.svc.UseClient(insertClient(t, s, false))
		o := f.open("s1", "fix the lockfile")
		c, err := f.svc.Close(ctx, o.Task.ID, "failed", "npm still fails")
		if err != nil || c.Mode != "both" || c.JobID == 0 || !strings.Contains(c.Material, "fix the lockfile") {
			t.Fatalf("closed %+v %v", c, err)
		}
		body := `{"assessment":"a","lessons":[{"relation":"new","kind":"failure","problem":"npm install rewrote the lockfile","avoid":"npm install in a pnpm repo"}]}`
		refl, err := reflection.Parse([]byte(body), reflection.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, errs[0] = f.svc.Reflect(ctx, o.Task.ID, []byte(body))
		}()
		go func() {
			defer wg.Done()
			errs[1] = s.InTx(ctx, func(tx *sql.Tx) error {
				_, err := f.svc.Apply(ctx, tx, o.Task.ID, refl, tasks.ByJob, c.JobID)
				return err
			})
		}()
		wg.Wait()
		won := 0
		for _, err := range errs {
			var already *tasks.AlreadyReflectedError
			switch {
			case err == nil:
				won++
			case !errors.As(err, &already):
				t.Fatalf("the loser: %v, want AlreadyReflected", err)
			}
		}
		rs, _ := s.ListReflections(ctx, s.DB, o.Task.ID)
		if won != 1 || len(rs) != 1 || countLessons(t, s) != 1 {
			t.Fatalf("%d won, %d reflections, %d lessons (%v)", won, len(rs), countLessons(t, s), errs)
		}
	})
}
