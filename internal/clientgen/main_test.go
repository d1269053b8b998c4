package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate fails when hookd's OpenAPI document has an op (or a
// field) a client's written file lacks: run make docs (or go run
// ./internal/clientgen) and commit the clients.
func TestGeneratedUpToDate(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%v: run go run ./internal/clientgen", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what hookd's OpenAPI document makes: run make docs (go run ./internal/clientgen) and commit it", path)
		}
	}
}

// TestEveryOpGenerated: each client's file names every operationId of the
// document (a generator that dropped an op would pass the test above).
func TestEveryOpGenerated(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, openapiGolden))
	if err != nil {
		t.Fatal(err)
	}
	m, err := load(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Ops) < 40 {
		t.Fatalf("%d ops read from the document; hookd has more than 40", len(m.Ops))
	}
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range files {
		for _, o := range m.Ops {
			if !strings.Contains(string(b), `"`+o.ID+`"`) {
				t.Errorf("%s lacks op %s", path, o.ID)
			}
		}
	}
}
