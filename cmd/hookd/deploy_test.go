package main

import (
	"bufio"
	"debug/elf"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStaticBinaryServesFromAnEmptyDirectory checks what the container
// image relies on: a CGO_ENABLED=0 build is static (no interpreter, no
// shared libraries), and `hookd serve` starts from an empty directory with
// nothing but HOOKD_DATABASE and HOOKD_MASTER_KEY, answers /healthz (with
// its version and revision) and /readyz, and stops cleanly on SIGTERM.
// Stamped as `make build` stamps it (the Makefile's VCS_LDFLAGS, from git;
// Go's own -buildvcs skips git worktrees such as this one may be),
// `hookd version` and /healthz name git's HEAD, its commit time and
// whether the tree was modified; without git, they say the revision is
// unknown.
func TestStaticBinaryServesFromAnEmptyDirectory(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "hookd")
	head, modified := gitHead(t)
	var ldflags string
	if head != "" {
		out, err := exec.Command("make", "-s", "-C", "../..", "vcs-ldflags").Output()
		if err != nil {
			t.Fatalf("make vcs-ldflags: %v", err)
		}
		ldflags = strings.TrimSpace(string(out))
	}
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=auto", "-ldflags", ldflags, "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("hookd version: %v", err)
	}
	switch {
	case head == "":
		if !strings.Contains(string(out), "revision unknown (built without VCS info)") {
			t.Errorf("hookd version built without VCS info printed %q, want it to say the revision is unknown", out)
		}
	case !strings.Contains(string(out), "revision "+head):
		t.Errorf("hookd version printed %q, want revision %s (git rev-parse HEAD)", out, head)
	case strings.Contains(string(out), "modified") != modified:
		t.Errorf("hookd version printed %q; the tree is modified: %v", out, modified)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader (PT_INTERP): not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v: not static", libs)
	}
	f.Close()

	dir := t.TempDir()
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0") // a free port: the machine is shared
	cmd.Dir = dir
	cmd.Env = []string{"HOOKD_DATABASE=hookd.db", "HOOKD_MASTER_KEY=" + key}
	stdout, _ := cmd.StdoutPipe()
	logs := &syncWriter{w: &strings.Builder{}}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "hookd listening on http://"); ok {
				addr <- strings.Fields(a)[0]
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-exited:
		t.Fatalf("hookd serve exited at start: %v\n%s", err, logs.w)
	case <-time.After(30 * time.Second):
		t.Fatalf("hookd serve did not start\n%s", logs.w)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var health struct {
			Revision string `json:"revision"`
			Modified *bool  `json:"modified"`
			Time     string `json:"vcs_time"`
		}
		if path == "/healthz" {
			if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
				t.Errorf("/healthz: %v", err)
			}
			if head != "" && (health.Revision != head || health.Modified == nil || *health.Modified != modified || health.Time == "") {
				t.Errorf("/healthz revision %q modified %v time %q, want %s, %v and the commit time", health.Revision, health.Modified, health.Time, head, modified)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d, want 200", path, resp.StatusCode)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("hookd serve after SIGTERM: %v\n%s", err, logs.w)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hookd serve did not stop on SIGTERM")
	}
	// The key came from the environment: no key file was written.
	if _, err := os.Stat(filepath.Join(dir, "hookd.key")); err == nil {
		t.Error("hookd wrote hookd.key although HOOKD_MASTER_KEY was set")
	}
	if _, err := os.Stat(filepath.Join(dir, "hookd.db")); err != nil {
		t.Errorf("no hookd.db in the working directory: %v", err)
	}
}

// gitHead returns this checkout's HEAD and whether its tree has changes
// (what Go stamps as vcs.modified: git status --porcelain, untracked files
// too), or "" where git or the checkout is missing.
func gitHead(t *testing.T) (string, bool) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("no git: the build carries no VCS info")
		return "", false
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Logf("git rev-parse HEAD: %v: not a checkout", err)
		return "", false
	}
	status, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	return strings.TrimSpace(string(head)), len(strings.TrimSpace(string(status))) > 0
}

// TestDockerBuild builds the image where a Docker daemon answers (this
// machine has none and cannot pull base images).
func TestDockerBuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("short")
	}
	if exec.Command("docker", "info").Run() != nil {
		t.Skip("no Docker daemon: the image is not built here (TestStaticBinaryServesFromAnEmptyDirectory checks the binary it holds)")
	}
	out, err := exec.Command("docker", "build", "-q", "-t", "hookd:test", "../..").CombinedOutput()
	if err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
}
