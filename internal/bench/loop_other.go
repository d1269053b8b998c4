//go:build !linux

package bench

import (
	"context"
	"errors"
)

// loopSupported: the event-loop load generator needs Linux's epoll.
const loopSupported = false

func publishLoop(context.Context, string, *plan, *requestTimes, []batch, int) error {
	return errors.New("the loop load generator needs Linux (epoll); use --generator conns")
}
