package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// backupReceiver counts every request by endpoint path and webhook-id as
// it arrives (a request that arrived was sent, whatever became of its
// answer). Once holdFrom requests have arrived, it holds the requests to
// even-numbered endpoints until release is closed: those deliveries stay
// in flight while the odd-numbered endpoints keep being delivered.
type backupReceiver struct {
	srv      *httptest.Server
	holdFrom int
	release  chan struct{}
	held     chan struct{} // signalled when a request is held

	mu      sync.Mutex
	arrived map[string]int // "path id" → requests
	total   int
}

func newBackupReceiver(t *testing.T, holdFrom int) *backupReceiver {
	r := &backupReceiver{holdFrom: holdFrom, release: make(chan struct{}), held: make(chan struct{}, 1), arrived: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.releaseHeld()
		r.srv.Close()
	})
	return r
}

func (r *backupReceiver) serve(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	var n int
	fmt.Sscanf(req.URL.Path, "/ep/%d", &n) //nolint:errcheck // every endpoint's path has the form
	r.mu.Lock()
	r.arrived[req.URL.Path+" "+req.Header.Get("webhook-id")]++
	r.total++
	hold := r.total > r.holdFrom && n%2 == 0
	r.mu.Unlock()
	if hold {
		select {
		case r.held <- struct{}{}:
		default:
		}
		select {
		case <-r.release:
		case <-req.Context().Done():
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *backupReceiver) releaseHeld() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.release:
	default:
		close(r.release)
	}
}

func (r *backupReceiver) sent(path, id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.arrived[path+" "+id]
}

// TestBackupWhileDelivering backs up a live hookd while 1,000 deliveries
// are under way (some delivered, some held in flight by the receiver,
// the rest queued, while other endpoints keep being delivered), then loses
// that hookd (SIGKILL), restores the backup into a new directory and
// starts hookd there: every delivery the backup records as delivered is
// never sent again, and every other one completes. A restore over the
// live database was refused before, and changed nothing.
func TestBackupWhileDelivering(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and delivers 1,000; skipped with -short")
	}
	t.Parallel()
	const endpoints, events, holdFrom = 20, 50, 300
	bin := serveBinary(t)
	dir := t.TempDir()
	key := createKey(t, dir)
	rc := newBackupReceiver(t, holdFrom)
	live := startServe(t, dir)
	call(t, live, key, "PUT", "/api/admin/event_types/order.created", `{"exposure":"webhook"}`, 200)
	for i := range endpoints {
		call(t, live, key, "POST", "/api/admin/webhooks", fmt.Sprintf(`{"url":"%s/ep/%d","event_types":["order.*"]}`, rc.srv.URL, i), 201)
	}
	var batch []string
	for i := range events {
		batch = append(batch, fmt.Sprintf(`{"type":"order.created","subject":"order://%d","data":{"n":%d}}`, i, i))
	}
	call(t, live, key, "POST", "/api/v1/events/batch", `{"events":[`+strings.Join(batch, ",")+`]}`, 202)

	select {
	case <-rc.held:
	case <-live.done:
		t.Fatalf("hookd exited: %v", live.err)
	case <-time.After(2 * time.Minute):
		t.Fatal("no delivery was held within 2 minutes")
	}
	backup := filepath.Join(t.TempDir(), "hookd-backup.db")
	out, err := exec.Command(bin, "backup", "--db", filepath.Join(dir, "hookd.db"), "--to", backup).CombinedOutput()
	if err != nil {
		t.Fatalf("hookd backup: %v\n%s", err, out)
	}
	t.Logf("hookd backup: %s", out)
	if !strings.Contains(string(out), "The master key is not in the backup") {
		t.Errorf("hookd backup did not warn that the master key is not in the backup:\n%s", out)
	}

	// A restore over the live database is refused, whatever the backup.
	out, err = exec.Command(bin, "restore", "--from", backup, "--db", filepath.Join(dir, "hookd.db")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "open in a running hookd") {
		t.Errorf("hookd restore over the live database: %v, want it refused as live:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "hookd.db.restoring")); err == nil {
		t.Error("the refused restore left hookd.db.restoring")
	}

	// The machine is lost right after the backup.
	if err := live.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-live.done
	rc.releaseHeld()

	delivered, unfinished := backupDeliveries(t, backup)
	t.Logf("the backup records %d deliveries delivered and %d not finished", len(delivered), unfinished)
	if len(delivered) == 0 || unfinished == 0 || len(delivered)+unfinished != endpoints*events {
		t.Fatalf("the backup has %d delivered and %d unfinished deliveries, want some of each and %d in all", len(delivered), unfinished, endpoints*events)
	}

	restored := t.TempDir()
	copyFile(t, filepath.Join(dir, "hookd.key"), filepath.Join(restored, "hookd.key")) // the key, kept apart
	out, err = exec.Command(bin, "restore", "--from", backup, "--db", filepath.Join(restored, "hookd.db")).CombinedOutput()
	if err != nil {
		t.Fatalf("hookd restore: %v\n%s", err, out)
	}
	t.Logf("hookd restore: %s", out)
	// The deliveries running when the backup was taken are handed out
	// again after --rescue-after, their leases after --lease-for: shorter
	// than the defaults (a minute, 20 s), not so short that a delivery
	// waiting for the one SQLite connection of a loaded machine times out
	// (its retry would come 5 minutes later).
	again := startServe(t, restored, "--job-timeout", "10s", "--http-timeout", "5s", "--lease-for", "11s", "--rescue-after", "11s")
	db, err := store.Open(context.Background(), store.Config{URL: filepath.Join(restored, "hookd.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waitUntil(t, 4*time.Minute, func(t *testing.T) {
		select {
		case <-again.done:
			t.Fatalf("restored hookd exited: %v", again.err)
		default:
		}
	}, "every delivery of the restored database is delivered", func() bool {
		return queryInts(t, db, `SELECT count(*) FROM hookd_deliveries WHERE state = 'delivered'`)[0] == endpoints*events
	})

	twice := 0
	for _, d := range delivered {
		if n := rc.sent(d.path, d.eventID); n != 1 {
			twice++
			if twice <= 5 {
				t.Errorf("%s %s was delivered before the backup and sent %d times in all", d.path, d.eventID, n)
			}
		}
	}
	resent := 0
	rc.mu.Lock()
	for _, n := range rc.arrived {
		resent += n - 1
	}
	unique := len(rc.arrived)
	rc.mu.Unlock()
	if unique != endpoints*events {
		t.Errorf("the receiver got %d distinct deliveries, want %d", unique, endpoints*events)
	}
	t.Logf("%d delivered before the backup, none sent again (%d were); %d unfinished ones completed after the restore; %d requests repeated a delivery not yet recorded", len(delivered), twice, unfinished, resent)
}

type backedUp struct{ path, eventID string }

// backupDeliveries reads the backup file: the deliveries it records as
// delivered (as the receiver's path and the event id) and how many are
// not finished.
func backupDeliveries(t *testing.T, path string) ([]backedUp, int) {
	t.Helper()
	info, err := store.InspectBackup(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(store.CachingSQLiteDriver, "file:"+path+"?mode=ro&immutable=1") // read, never change, the backup
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT e.url, d.event_id FROM hookd_deliveries d JOIN hookd_endpoints e ON e.id = d.endpoint_id WHERE d.state = 'delivered'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []backedUp
	for rows.Next() {
		var u, id string
		if err := rows.Scan(&u, &id); err != nil {
			t.Fatal(err)
		}
		_, p, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
		out = append(out, backedUp{"/" + p, id})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != info.Deliveries["delivered"] {
		t.Fatalf("InspectBackup counts %d delivered, the table %d", info.Deliveries["delivered"], len(out))
	}
	return out, info.Unfinished()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRefusals: each bad restore (and bad backup) fails with a
// message that says what to fix, and writes nothing: no database, no
// temporary file, not even the target's directory.
func TestRestoreRefusals(t *testing.T) {
	// Not parallel: t.Setenv (run reads HOOKD_MASTER_KEY).
	t.Setenv("HOOKD_MASTER_KEY", "")
	t.Setenv("HOOKD_MASTER_KEY_FILE", "")
	ctx := context.Background()
	hookdRun := func(args ...string) (int, string) {
		var stdout, stderr strings.Builder
		code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	src := t.TempDir()
	db := filepath.Join(src, "hookd.db")
	if code, out := hookdRun("apikey", "create", "--owner", "acme", "--db", db); code != 0 {
		t.Fatalf("apikey create: %d\n%s", code, out)
	}
	sealEndpoint(t, db, filepath.Join(src, "hookd.key"))
	backup := filepath.Join(t.TempDir(), "hookd-backup.db")
	if code, out := hookdRun("backup", "--db", db, "--to", backup); code != 0 {
		t.Fatalf("backup: %d\n%s", code, out)
	}
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte("not a database at all, but long enough to read a header from"), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(t.TempDir(), "other.db") // an SQLite file of someone else's
	execSQLite(t, foreign, `CREATE TABLE notes (id INTEGER PRIMARY KEY)`)
	riverOnly := filepath.Join(t.TempDir(), "river.db") // a River application's database, not hookd's
	execSQLite(t, riverOnly, `CREATE TABLE river_migration (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)`)
	damaged := filepath.Join(t.TempDir(), "damaged.db") // a backup with a page overwritten
	copyFile(t, backup, damaged)
	damage(t, damaged)
	newer := filepath.Join(t.TempDir(), "newer.db") // a backup of a hookd with migration 999
	copyFile(t, backup, newer)
	execSQLite(t, newer, `INSERT INTO hookd_migrations (version, applied_at) VALUES (999, 0)`)
	wrongKey := filepath.Join(t.TempDir(), "wrong.key")
	if err := os.WriteFile(wrongKey, []byte(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))), 0o600); err != nil { // a key, not the one
		t.Fatal(err)
	}

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no backup file", []string{"--from", filepath.Join(src, "missing.db")}, 1, "no such file"},
		{"not SQLite", []string{"--from", junk}, 1, "not a hookd backup: not an SQLite file"},
		{"SQLite but not hookd", []string{"--from", foreign}, 1, "without hookd's tables"},
		{"River's but not hookd's", []string{"--from", riverOnly}, 1, "without hookd's tables"},
		{"damaged", []string{"--from", damaged}, 1, "damaged"},
		{"a newer hookd's backup", []string{"--from", newer}, 1, "written by a newer hookd: it records hookd migrations [999]"},
		{"no master key", []string{"--from", backup}, 1, "no master key"},
		{"the wrong master key", []string{"--from", backup, "--master-key-file", wrongKey}, 1, "is not the key of the hookd that wrote the backup"},
		{"no --from", nil, 2, "--from is required"},
		{"PostgreSQL", []string{"--from", backup, "--db", "postgres://127.0.0.1:1/x"}, 2, "pg_dump"},
	}
	for _, c := range cases {
		target := filepath.Join(t.TempDir(), "restored")
		args := append([]string{"restore", "--db", filepath.Join(target, "hookd.db")}, c.args...)
		code, out := hookdRun(args...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%s", c.name, code, c.code, c.want, out)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%s: the refused restore created %s", c.name, target)
		}
	}

	// An existing database is never replaced, live or not.
	code, out := hookdRun("restore", "--from", backup, "--db", db)
	if code != 1 || !strings.Contains(out, "exists: hookd restore writes only a new database") {
		t.Errorf("restore over a stopped database: exit %d:\n%s", code, out)
	}
	// Nor is a stale -wal left beside a missing database (SQLite would
	// replay it into the restored file).
	stale := t.TempDir()
	if err := os.WriteFile(filepath.Join(stale, "hookd.db-wal"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out = hookdRun("restore", "--from", backup, "--db", filepath.Join(stale, "hookd.db"), "--ignore-key")
	if code != 1 || !strings.Contains(out, "hookd.db-wal exists") {
		t.Errorf("restore beside a stale -wal: exit %d:\n%s", code, out)
	}
	// A backup never overwrites a file, and leaves no partial one.
	code, out = hookdRun("backup", "--db", db, "--to", backup)
	if code != 1 || !strings.Contains(out, "never overwrites") {
		t.Errorf("backup to an existing file: exit %d:\n%s", code, out)
	}
	code, out = hookdRun("backup", "--db", foreign, "--to", filepath.Join(t.TempDir(), "b.db"))
	if code != 1 || !strings.Contains(out, "without hookd's tables") {
		t.Errorf("backup of a foreign SQLite file: exit %d:\n%s", code, out)
	}
	code, out = hookdRun("backup", "--db", filepath.Join(src, "missing.db"), "--to", filepath.Join(t.TempDir(), "b.db"))
	if code != 1 || !strings.Contains(out, "no such file") {
		t.Errorf("backup of a missing database: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(src, "missing.db")); err == nil {
		t.Error("backup of a missing database created it")
	}

	// The right key restores; so does --ignore-key without it.
	target := filepath.Join(t.TempDir(), "ok")
	if err := os.MkdirAll(target, 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(src, "hookd.key"), filepath.Join(target, "hookd.key"))
	if code, out := hookdRun("restore", "--from", backup, "--db", filepath.Join(target, "hookd.db")); code != 0 || !strings.Contains(out, "restored") {
		t.Errorf("restore with the right key: exit %d:\n%s", code, out)
	}
	if code, out := hookdRun("migrate", "status", "--db", filepath.Join(target, "hookd.db")); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("migrate status of the restored database: exit %d:\n%s", code, out)
	}
	ignored := filepath.Join(t.TempDir(), "ignored", "hookd.db")
	if code, out := hookdRun("restore", "--from", backup, "--db", ignored, "--ignore-key"); code != 0 {
		t.Errorf("restore --ignore-key: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ignored), "hookd.key")); err == nil {
		t.Error("restore created a master key")
	}
}

// sealEndpoint adds an endpoint whose secret is sealed with the key in
// keyFile, as hookd does.
func sealEndpoint(t *testing.T, db, keyFile string) {
	t.Helper()
	key, err := endpoint.LoadMasterKey("", keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := endpoint.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal("whsec_c2VjcmV0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(context.Background(), store.Config{URL: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := &endpoint.Endpoint{ID: "ep_backup", OwnerID: "acme", URL: "https://example.com/hook", EventTypes: []string{"*"},
		SecretSealed: sealed, Enabled: true, MaxInFlight: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.InTx(context.Background(), store.TxOptions{}, func(q *store.Q) error { return q.CreateEndpoint(context.Background(), e) }); err != nil {
		t.Fatal(err)
	}
}

// execSQLite runs one statement on the SQLite file at path (created if
// missing), outside hookd.
func execSQLite(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open(store.CachingSQLiteDriver, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

// damage overwrites a page in the middle of the SQLite file at path: the
// header still says SQLite, the page no longer holds together.
func damage(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if _, err := f.WriteAt([]byte(strings.Repeat("\xff", page)), st.Size()/page/2*page); err != nil {
		t.Fatal(err)
	}
}
