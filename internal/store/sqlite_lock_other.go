//go:build !unix

package store

// lockFile takes no lock where flock is missing: hookd restore cannot tell
// a live database there (docs/deploy.md says so).
func lockFile(string, bool) (*fileLock, error) { return &fileLock{}, nil }
