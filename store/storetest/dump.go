package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
)

// Dump returns every value of every table of s (mull's and River's) as
// text, one "table: row" line per row, for a test that asserts something
// (a secret, an instruction) is nowhere in the database.
func Dump(t testing.TB, s *store.Store) string {
	t.Helper()
	ctx := context.Background()
	list := `select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`
	if s.Dialect == store.SQLite {
		list = `select name from sqlite_master where type = 'table'`
	}
	rows, err := s.DB.QueryContext(ctx, list)
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, table := range tables {
		dumpTable(t, s, table, &b)
	}
	return b.String()
}

func dumpTable(t testing.TB, s *store.Store, table string, b *strings.Builder) {
	t.Helper()
	rows, err := s.DB.QueryContext(context.Background(), `select * from "`+table+`"`)
	if err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		b.WriteString(table + ":")
		for _, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprintf(b, " %v", v)
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
