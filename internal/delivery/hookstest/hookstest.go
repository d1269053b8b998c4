// Package hookstest lets a test install the delivery service's test hooks
// (delivery.Hooks): they exist only in a build with the hookdtest tag
// (make test-go passes -tags hookdtest). Without the tag Set ends the test
// that needs them: it skips, saying how to run it, and fails under CI,
// which must run every test.
package hookstest
