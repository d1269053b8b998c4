//go:build race

package e2e_test

// raceEnabled: the race detector slows SQLite (modernc, translated C) and
// the tests many times over; bulk tests size themselves down under it.
const raceEnabled = true
