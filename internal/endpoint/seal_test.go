package endpoint

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSealRoundTrip(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal("whsec_abc")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("whsec_abc")) {
		t.Fatal("sealed secret contains the plaintext")
	}
	got, err := s.Open(sealed)
	if err != nil || got != "whsec_abc" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Open(sealed); err == nil {
		t.Fatal("Open with another key succeeded")
	}
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Fatal("NewSealer accepted a short key")
	}
}

func TestLoadMasterKeyCreatesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hookd.key")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	k1, err := LoadMasterKey("", path, log)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", st.Mode().Perm())
	}
	k2, err := LoadMasterKey("", path, log)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second load differs: %v", err)
	}
	if _, err := LoadMasterKey("not base64!", path, log); err == nil {
		t.Fatal("bad env key accepted")
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	r := DefaultRules
	since := now.Add(-5*24*time.Hour + time.Second)
	if r.ShouldDisable(&since, now) {
		t.Fatal("disabled before 5 days")
	}
	since = now.Add(-5 * 24 * time.Hour)
	if !r.ShouldDisable(&since, now) {
		t.Fatal("not disabled at 5 days")
	}
	if r.ShouldDisable(nil, now) {
		t.Fatal("healthy endpoint disabled")
	}
	ep := &Endpoint{Enabled: true}
	if got := r.ScheduleFor(ep, now); !got.Equal(now) {
		t.Fatalf("healthy endpoint scheduled at %v", got)
	}
	ep.FailingSince = &since
	if got := r.ScheduleFor(ep, now); !got.Equal(now.Add(5 * time.Minute)) {
		t.Fatalf("failing endpoint scheduled at %v, want +5m", got)
	}
	if ep.State() != Failing {
		t.Fatalf("state %s", ep.State())
	}
}
