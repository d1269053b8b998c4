//go:build !race

package hookd_test

const raceEnabled = false
