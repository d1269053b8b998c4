package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readmeBlocks returns README.md's code blocks marked for this test: each
// `<!-- readme-test: NAME -->` line followed by a fenced block.
func readmeBlocks(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- readme-test: ([a-z-]+) -->\n```[a-z]*\n(.*?)```\n")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	for _, name := range []string{"quickstart", "quickstart-output", "by-hand", "kwork", "stop"} {
		if out[name] == "" {
			t.Fatalf("README.md has no block marked <!-- readme-test: %s -->", name)
		}
	}
	return out
}

// shellOutput is the combined output of the shell running the README,
// line by line, with when each line arrived.
type shellOutput struct {
	mu    sync.Mutex
	lines []outLine
	more  chan struct{} // closed and replaced on each new line
	done  bool
}

type outLine struct {
	text string
	at   time.Time
}

func (o *shellOutput) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		o.mu.Lock()
		o.lines = append(o.lines, outLine{sc.Text(), time.Now()})
		close(o.more)
		o.more = make(chan struct{})
		o.mu.Unlock()
	}
	o.mu.Lock()
	o.done = true
	close(o.more)
	o.more = make(chan struct{})
	o.mu.Unlock()
}

// waitFor returns the index of the first line at or after from matching
// re, failing the test after d.
func (o *shellOutput) waitFor(t *testing.T, from int, re *regexp.Regexp, d time.Duration) int {
	t.Helper()
	deadline := time.After(d)
	for {
		o.mu.Lock()
		for i := from; i < len(o.lines); i++ {
			if re.MatchString(o.lines[i].text) {
				o.mu.Unlock()
				return i
			}
		}
		more, done := o.more, o.done
		o.mu.Unlock()
		if done {
			t.Fatalf("the shell ended without printing a line matching %s; it printed:\n%s", re, o.text())
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no line matching %s within %s; the shell printed:\n%s", re, d, o.text())
		}
	}
}

func (o *shellOutput) line(i int) outLine {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lines[i]
}

func (o *shellOutput) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	for _, l := range o.lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// shape is a line with its times and ids replaced, to compare the README's
// sample output with a real run's.
func shape(s string) string {
	s = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`).ReplaceAllString(s, "<time>")
	return regexp.MustCompile(`\b(evt|ep|dlv)_[0-9A-Z]{26}\b`).ReplaceAllString(s, "${1}_<id>")
}

// TestReadme runs the README's own quick start, its by-hand endpoint and
// its kwork owner, exactly as written, in one bash session against the
// built binary: each ends with a delivery the listener verified and
// printed, within a second of the publish, and the quick start's output
// has the shape the README shows.
func TestReadme(t *testing.T) {
	// Not parallel: the README's commands bind the fixed ports 8080 and 9000–9002.
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the README's quick start uses curl: install it (Debian package curl)")
	}
	blocks := readmeBlocks(t)
	for _, addr := range []string{"127.0.0.1:8080", "127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:9002"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("the README's commands use %s, which is taken here: %v", addr, err)
		}
		ln.Close()
	}
	dir := t.TempDir()
	// The README's build step, into the test's directory instead of the clone.
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "hookd"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sh := exec.Command("bash")
	sh.Dir = dir
	sh.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "NO_COLOR=1"}
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	sh.Stdout, sh.Stderr = pw, pw
	out := &shellOutput{more: make(chan struct{})}
	go out.read(pr)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sh.Wait(); pw.Close() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) // whatever the README left running
	})
	send := func(block string) int {
		out.mu.Lock()
		from := len(out.lines)
		out.mu.Unlock()
		if _, err := io.WriteString(stdin, block+"\n"); err != nil {
			t.Fatalf("write to the shell: %v", err)
		}
		return from
	}
	// delivered waits for the publish's answer and then the listener's
	// print of that event, and returns the print's line index.
	delivered := func(from int, typ string) int {
		t.Helper()
		pub := out.waitFor(t, from, regexp.MustCompile(`^\{"id":"evt_[0-9A-Z]{26}"`), 30*time.Second)
		id := regexp.MustCompile(`evt_[0-9A-Z]{26}`).FindString(out.line(pub).text)
		got := out.waitFor(t, from, regexp.MustCompile(`^\S+Z `+regexp.QuoteMeta(typ)+` id=\S+$`), 30*time.Second)
		if lag := out.line(got).at.Sub(out.line(pub).at); lag > time.Second {
			t.Errorf("%s was printed %s after the publish answered, want within a second", typ, lag)
		}
		// The body follows the line that announced it: wait for it too
		// (its lines may not have been read yet).
		out.waitFor(t, got, regexp.MustCompile(`"id": "`+regexp.QuoteMeta(id)+`"`), 5*time.Second)
		return got
	}

	from := send(blocks["quickstart"])
	at := delivered(from, "invoice.paid")
	sample := strings.Split(strings.TrimRight(blocks["quickstart-output"], "\n"), "\n")
	// The listener's first two lines, then (after a blank line) the delivery.
	for _, want := range sample[:2] {
		i := out.waitFor(t, from, regexp.MustCompile(`^`+regexp.QuoteMeta(strings.Fields(want)[0])+` `), time.Second)
		if got := out.line(i).text; shape(got) != shape(want) {
			t.Errorf("listener printed\n  %s\nthe README shows\n  %s", got, want)
		}
	}
	body := sample[3:]
	for i, want := range body {
		if got := out.waitFor(t, at+i, regexp.MustCompile(`.*`), time.Second); got != at+i || shape(out.line(got).text) != shape(want) {
			t.Errorf("delivery line %d: listener printed %q, the README shows %q", i, out.line(at+i).text, want)
		}
	}

	from = send(blocks["by-hand"])
	delivered(from, "order.shipped")

	from = send(blocks["kwork"])
	at = delivered(from, "ticket.closed")
	// The body's lines follow the delivery's line: read them once its
	// closing brace has arrived.
	end := out.waitFor(t, at, regexp.MustCompile(`^}$`), 5*time.Second)
	var kwork []string
	for i := at; i <= end; i++ {
		kwork = append(kwork, out.line(i).text)
	}
	kworkBody := strings.Join(kwork, "\n")
	for _, want := range []string{`"tenant": "acme_corp"`, `"environment": "test"`, `"app": "app_1"`} {
		if !strings.Contains(kworkBody, want) {
			t.Errorf("the kwork delivery lacks %s:\n%s", want, kworkBody)
		}
	}

	from = send(blocks["stop"])
	stdin.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the shell ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the README's stop block left the shell running; it printed:\n%s", out.text())
	}
	if n := strings.Count(strings.Join(strings.Split(out.text(), "\n")[from:], "\n"), "deleted endpoint ep_"); n != 2 {
		t.Errorf("the two --forward listeners deleted %d endpoints on stop, want 2:\n%s", n, out.text())
	}
	if t.Failed() {
		fmt.Fprintf(os.Stderr, "README run output:\n%s", out.text())
	}
}

// TestMakeFuzzRunsEveryTarget: `make fuzz` names every Fuzz function of
// the module with its package, so a new fuzz target is run by it.
func TestMakeFuzzRunsEveryTarget(t *testing.T) {
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(\./[\w/.-]*/):(Fuzz\w+)`).FindAllStringSubmatch(string(mk), -1) {
		listed[m[1]+":"+m[2]] = true
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	found := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "deploy") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(b), -1) {
			found++
			if key := "./" + filepath.ToSlash(rel) + "/:" + m[1]; !listed[key] {
				t.Errorf("make fuzz does not run %s: add %q to FUZZ_TARGETS in the Makefile", m[1], key)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("found no Fuzz function in the module: the walk is wrong")
	}
}

// TestReadmeTourNamesEveryPackage: the README's tour of the folders names
// every package under internal/, so a new one is placed for its reader.
func TestReadmeTourNamesEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(b), "## Tour of the folders")
	if !ok {
		t.Fatal("README.md has no \"## Tour of the folders\"")
	}
	if i := strings.Index(tour, "\n## "); i >= 0 {
		tour = tour[:i]
	}
	entries, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.Contains(tour, "internal/"+e.Name()+"/") && !strings.Contains(tour, "internal/"+e.Name()+":") && !strings.Contains(tour, "internal/"+e.Name()+",") {
			t.Errorf("README.md's tour of the folders does not name internal/%s/", e.Name())
		}
	}
}
