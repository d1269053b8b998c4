// Command clientgen writes hookd's producer clients' ops from the OpenAPI
// document (internal/openapi/testdata/openapi.golden.json, what
// /openapi.json serves): client/ops.go (Go), clients/typescript/src/ops.ts
// and clients/python/hookd/_ops.py. The clients' transport, retries and
// errors are written by hand beside them. make docs runs it; its test fails
// when a written file differs from what the document makes.
//
//	go run ./internal/clientgen [-root DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// openapiGolden is the document, relative to the repository's root.
const openapiGolden = "internal/openapi/testdata/openapi.golden.json"

// output is one generated file: its path from the root and its writer.
type output struct {
	path  string
	write func(*model) ([]byte, error)
}

var outputs = []output{
	{"client/ops.go", goClient},
	{"clients/typescript/src/ops.ts", tsClient},
	{"clients/python/hookd/_ops.py", pyClient},
}

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "clientgen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	files, err := generate(root)
	if err != nil {
		return err
	}
	for path, b := range files {
		if err := os.WriteFile(filepath.Join(root, path), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// generate returns every output's content by its path.
func generate(root string) (map[string][]byte, error) {
	raw, err := os.ReadFile(filepath.Join(root, openapiGolden))
	if err != nil {
		return nil, err
	}
	m, err := load(raw)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, o := range outputs {
		b, err := o.write(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.path, err)
		}
		files[o.path] = b
	}
	return files, nil
}
