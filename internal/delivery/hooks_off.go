//go:build !hookdtest

package delivery

import "context"

// Without the hookdtest tag (hookd's own build) the hook points of
// hooks_on.go are empty methods: each call is inlined to nothing, and the
// Service holds no hooks and has no SetHooks (hooks.go).

// hookSet holds nothing without the tag.
type hookSet struct{}

func (*Service) beforeRelease(string)        {}
func (*Service) beforeFanoutTx(string)       {}
func (*Service) fanoutWaits(string) func()   { return nil }
func (*Service) beforeFanoutCommit([]string) {}
func (*Service) publishQueued() func(int)    { return nil }
func (*Service) publishGroupHook(int) error  { return nil }
func (*Service) beforePublishGroup(int)      {}
func (*Service) expectedGroup(bool)          {}
func (*Service) fanoutWritten(bool)          {}
func (*Service) beforePrune(context.Context) {}
