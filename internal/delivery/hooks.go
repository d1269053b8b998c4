package delivery

import "context"

// The test hooks stop the delivery service at its hand-over windows, so
// that tests force the interleavings that found real races. They run only
// in a build with the hookdtest tag (hooks_on.go: the Service holds the
// installed Hooks, SetHooks installs them, and each hook point checks its
// hook). Without the tag (hookd's own build, hooks_off.go) the Service
// holds nothing for them and every hook point is an empty method the
// compiler inlines away: no check, no load and no call on any path, and no
// SetHooks. A test installs hooks through hookstest.Set, which without
// the tag skips the test (fails it under CI, which must pass the tag).

// Hooks are the test hooks: each runs at its point (docs/design.md,
// "Handing over", reasons about the interleavings they force). A nil field
// does nothing. Only a build with the hookdtest tag can install them
// (Service.SetHooks).
type Hooks struct {
	// BeforeRelease runs before a lease holder releases its slot and
	// looks for deliveries committed meanwhile: when its drain has ended,
	// or when its job ends without handing over (letGo).
	BeforeRelease func(endpointID string)
	// BeforeFanoutTx runs when a fanout has read the owner's endpoints
	// and scope view, before its transaction, with the event's id.
	BeforeFanoutTx func(eventID string)
	// FanoutWaits runs when a fanout starts waiting for another fanout of
	// its owner in this process to end, with its event's id.
	FanoutWaits func(eventID string)
	// BeforeFanoutCommit runs inside a fanout's transaction, once it has
	// deferred the jobs of deliveries to busy endpoints (their ids).
	BeforeFanoutCommit func(deferred []string)
	// PublishQueued runs when a single publish has queued behind a
	// committing group, with the number of calls now queued.
	PublishQueued func(queued int)
	// PublishGroup runs inside a group commit's transaction, before its
	// writes, with the group's size; an error fails that transaction as a
	// database error would.
	PublishGroup func(size int) error
	// BeforePublishGroup runs when a group commit is about to open its
	// transaction, with the group's size (on SQLite, holding it there
	// holds no connection).
	BeforePublishGroup func(size int)
	// ExpectedGroup runs when a group commit tried its one-round-trip
	// insert (publish_onetrip.go), with whether what it expected held (false: the
	// group went on the usual way).
	ExpectedGroup func(held bool)
	// FanoutWritten runs when a fanout has written deliveries, with
	// whether it wrote them and committed in one round trip
	// (store.Q.WriteFanoutAndCommit).
	FanoutWritten func(oneTrip bool)
	// BeforePrune runs when a retention pass starts, with the pass's
	// context (the job's: its deadline is the job's timeout).
	BeforePrune func(ctx context.Context)
}
