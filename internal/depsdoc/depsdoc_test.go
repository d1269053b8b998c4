package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDependenciesDoc fails when docs/dependencies.md is not what the
// module graph gives (a dependency added, removed or upgraded without
// `make deps-doc`), or when a dependency's licence is not one an
// Apache-2.0 project may depend on.
func TestDependenciesDoc(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	ms, err := modules(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("go list found no dependencies")
	}
	for _, m := range ms {
		if !slices.Contains(compatible, m.licence) {
			t.Errorf("%s %s is %s, not a licence hookd (Apache-2.0) may depend on", m.path, m.version, m.licence)
		}
	}
	got, err := render(root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, "docs", "dependencies.md"))
	if err != nil {
		t.Fatalf("%v: run make deps-doc", err)
	}
	if !bytes.Equal(got, want) {
		for _, m := range ms {
			if !bytes.Contains(want, []byte("| `"+m.path+"` | "+m.version+" |")) {
				t.Errorf("docs/dependencies.md does not list %s %s (%s)", m.path, m.version, m.licence)
			}
		}
		t.Error("docs/dependencies.md is out of date: run make deps-doc")
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"Apache License\n Version 2.0, January 2004":                                                     "Apache-2.0",
		"MIT License\n\nPermission is hereby granted, free of charge, to any person":                     "MIT",
		"Redistribution and use in source and binary forms ... Neither the name of Google":               "BSD-3-Clause",
		"Redistribution and use in source and binary forms, with or without modification, are permitted": "BSD-2-Clause",
		"Permission to use, copy, modify, and/or distribute this software for any purpose with or":       "ISC",
		"Mozilla Public License Version 2.0":                                                             "MPL-2.0",
		"GNU GENERAL PUBLIC LICENSE Version 3":                                                           "",
	} {
		if got := classify(text); got != want {
			t.Errorf("classify(%.40q) = %q, want %q", text, got, want)
		}
	}
}
