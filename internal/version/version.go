// Package version reports which hookd this is, from the build info Go
// embeds in every binary: the module version (a tag, a pseudo-version, or
// "(devel)" for a local build) and the VCS revision (when built with VCS
// stamping, the default for `go build` in a git checkout).
package version

import (
	"runtime/debug"
	"sync"
)

// Info is the build's identity.
type Info struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
}

// Get returns the running binary's Info.
var Get = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	in := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
})

// String is "hookd VERSION (REVISION[, modified]) GO".
func (in Info) String() string {
	s := "hookd " + in.Version
	if in.Revision != "" {
		s += " (" + in.Revision
		if in.Modified {
			s += ", modified"
		}
		s += ")"
	}
	if in.Go != "" {
		s += " " + in.Go
	}
	return s
}
