package store_test

import (
	"errors"
	"testing"

	"github.com/hookd/hookd/internal/store"
)

// TestInTxRelaxed: a relaxed transaction commits what it wrote, without
// waiting for the WAL flush (PostgreSQL: synchronous_commit is off when
// the COMMIT runs, seen by a trigger deferred to the commit), and leaves
// nothing behind when its function fails, or when one of its statements
// does after others ran.
func TestInTxRelaxed(t *testing.T) {
	setup(t, func(t *testing.T, s *bundle) {
		s.exec(`CREATE TABLE relaxed_rows (id text PRIMARY KEY)`)
		pg := s.db.Pool() != nil
		if pg {
			// The commit-time setting, recorded as each transaction commits.
			s.exec(`CREATE TABLE relaxed_seen (setting text)`)
			s.exec(`CREATE FUNCTION relaxed_seen() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN INSERT INTO relaxed_seen VALUES (current_setting('synchronous_commit')); RETURN NULL; END $$`)
			s.exec(`CREATE CONSTRAINT TRIGGER relaxed_seen AFTER INSERT ON relaxed_rows DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION relaxed_seen()`)
		}
		insert := func(q *store.Q, id string) error {
			_, err := q.Exec(s.ctx, `INSERT INTO relaxed_rows (id) VALUES ($1)`, id)
			return err
		}
		must(t, s.db.InTx(s.ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) error {
			if err := insert(q, "a"); err != nil {
				return err
			}
			return insert(q, "b")
		}))
		if n := s.count(`SELECT count(*) FROM relaxed_rows`); n != 2 {
			t.Fatalf("%d rows after the relaxed commit, want 2", n)
		}
		if pg {
			var settings []string
			rows, err := s.db.Pool().Query(s.ctx, `SELECT setting FROM relaxed_seen`)
			must(t, err)
			for rows.Next() {
				var v string
				must(t, rows.Scan(&v))
				settings = append(settings, v)
			}
			must(t, rows.Err())
			if len(settings) != 2 || settings[0] != "off" || settings[1] != "off" {
				t.Fatalf("synchronous_commit at the relaxed commit: %v, want off for both rows", settings)
			}
			// An ordinary transaction still waits for its flush.
			must(t, s.db.InTx(s.ctx, store.TxOptions{}, func(q *store.Q) error { return insert(q, "c") }))
			var last string
			must(t, s.db.Pool().QueryRow(s.ctx, `SELECT setting FROM relaxed_seen ORDER BY ctid DESC LIMIT 1`).Scan(&last))
			if last == "off" {
				t.Fatal("an ordinary transaction committed with synchronous_commit off")
			}
			s.exec(`DELETE FROM relaxed_rows WHERE id = 'c'`)
		}

		// The function fails after a write: nothing stays.
		boom := errors.New("boom")
		err := s.db.InTx(s.ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) error {
			if err := insert(q, "d"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("InTx(Relaxed) = %v, want the function's error", err)
		}
		// A statement fails (a repeated key) after one that wrote.
		if err := s.db.InTx(s.ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) error {
			if err := insert(q, "e"); err != nil {
				return err
			}
			return insert(q, "a")
		}); err == nil {
			t.Fatal("a relaxed transaction whose statement failed reported success")
		}
		if n := s.count(`SELECT count(*) FROM relaxed_rows WHERE id IN ('d', 'e')`); n != 0 {
			t.Fatalf("%d rows of failed relaxed transactions stayed, want 0", n)
		}
		// The connection is clean for the next one.
		must(t, s.db.InTx(s.ctx, store.TxOptions{Relaxed: true}, func(q *store.Q) error { return insert(q, "f") }))
		if n := s.count(`SELECT count(*) FROM relaxed_rows`); n != 3 {
			t.Fatalf("%d rows, want 3 (a, b, f)", n)
		}
	})
}
