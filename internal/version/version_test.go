package version

import (
	"runtime/debug"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: "(devel)"}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, c := range []struct {
		name    string
		bi      *debug.BuildInfo
		stamped stamp
		want    string
	}{
		{"stamped by go", vcs("vcs.revision", "abc123", "vcs.time", "2026-12-01T12:00:00Z", "vcs.modified", "false"), stamp{},
			"hookd (devel) revision abc123 (2026-12-01T12:00:00Z) go1.26"},
		{"modified", vcs("vcs.revision", "abc123", "vcs.time", "2026-12-01T12:00:00Z", "vcs.modified", "true"), stamp{},
			"hookd (devel) revision abc123 (2026-12-01T12:00:00Z, modified) go1.26"},
		{"no vcs info", vcs(), stamp{}, "hookd (devel) revision unknown (built without VCS info) go1.26"},
		{"ldflags stamp", vcs(), stamp{"def456", "2026-12-01T13:00:00Z", "true"}, "hookd (devel) revision def456 (2026-12-01T13:00:00Z, modified) go1.26"},
		{"revision only", vcs(), stamp{revision: "def456"}, "hookd (devel) revision def456 go1.26"},
		{"go's stamp wins", vcs("vcs.revision", "abc123"), stamp{"def456", "2026-12-01T13:00:00Z", "true"}, "hookd (devel) revision abc123 go1.26"},
	} {
		if got := fromBuildInfo(c.bi, true, c.stamped).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := fromBuildInfo(nil, false, stamp{}).String(); got != "hookd unknown revision unknown (built without VCS info)" {
		t.Errorf("no build info: %q", got)
	}
}
