// Package version reports which hookd this is, from the build info Go
// embeds in every binary: the module version (a tag, a pseudo-version, or
// "(devel)" for a local build) and the VCS revision, its commit time and
// whether the tree was modified. Go stamps those itself (-buildvcs) in a
// plain git clone, but not in a git worktree (its .git is a file, which Go
// does not recognise) nor with GOFLAGS=-buildvcs=false, as on some
// machines; so `make build` stamps them from git with -ldflags -X (see
// the Makefile's VCS_LDFLAGS), and the Dockerfile takes a HOOKD_REVISION
// build argument where its context has no checkout. Go's own stamp wins.
package version

import (
	"runtime/debug"
	"sync"
)

// Unknown is what stands for the revision of a build without VCS info.
const Unknown = "unknown (built without VCS info)"

// Set with -ldflags -X (Makefile, Dockerfile): the revision, its commit
// time (RFC 3339, UTC) and "true" when the tree had changes.
var stampedRevision, stampedTime, stampedModified string

// stamp is what -ldflags set.
type stamp struct{ revision, time, modified string }

// Info is the build's identity.
type Info struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"` // "" when unknown
	Time     string `json:"vcs_time,omitempty"` // the revision's commit time (RFC 3339)
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
}

// Get returns the running binary's Info.
var Get = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	return fromBuildInfo(bi, ok, stamp{stampedRevision, stampedTime, stampedModified})
})

func fromBuildInfo(bi *debug.BuildInfo, ok bool, st stamp) Info {
	if !ok {
		bi = &debug.BuildInfo{Main: debug.Module{Version: "unknown"}}
	}
	in := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	if in.Revision == "" && st.revision != "" {
		in.Revision, in.Time, in.Modified = st.revision, st.time, st.modified == "true"
	}
	return in
}

// RevisionText is the revision as people read it: the commit, or Unknown.
func (in Info) RevisionText() string {
	if in.Revision == "" {
		return Unknown
	}
	return in.Revision
}

// String is "hookd VERSION revision REVISION (TIME, modified) GO", or
// "hookd VERSION revision unknown (built without VCS info) GO".
func (in Info) String() string {
	s := "hookd " + in.Version + " revision " + in.RevisionText()
	var notes []string
	if in.Time != "" {
		notes = append(notes, in.Time)
	}
	if in.Modified {
		notes = append(notes, "modified")
	}
	for i, n := range notes {
		if i == 0 {
			s += " ("
		} else {
			s += ", "
		}
		s += n
	}
	if len(notes) > 0 {
		s += ")"
	}
	if in.Go != "" {
		s += " " + in.Go
	}
	return s
}
