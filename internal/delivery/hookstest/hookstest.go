// Package hookstest lets a test install the delivery service's test hooks
// (delivery.Hooks): they exist only in a build with the hookdtest tag
// (make test-go passes -tags hookdtest). Without the tag Set ends the test
// that needs them: it skips, saying how to run it, and fails under CI,
// which must run every test.
package hookstest

// why is what Set says when the build has no hooks.
const why = "this test forces an interleaving with the delivery service's test hooks, which only a build with -tags hookdtest has (make test-go passes it)"
