package brokertest

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// SQS starts moto's server (a Python implementation of the AWS APIs, the
// SQS JSON protocol included; pip's moto[server], on this machine class)
// on a loopback port of the test's own, stopped after the test, and
// returns its address. env adds to its environment:
// INITIAL_NO_AUTH_ACTION_COUNT=0 makes it check every request's key.
//
// Not goaws: Admiral-Piett/goaws v0.4.5 (the approved version) routes
// requests by the query protocol's form field Action only, and
// aws-sdk-go-v2/service/sqs v1.53.0 speaks only the AWS JSON 1.0
// protocol (X-Amz-Target), so none of its requests reaches a handler.
//
// moto missing: the test is skipped, or fails under CI=true.
func SQS(t testing.TB, env ...string) string {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("moto_server is not installed (%v): CI needs it for the SQS tests", err)
		}
		t.Skipf("moto_server is not installed: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close() // moto binds it itself
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server did not listen on %s within 30 s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a port another process opens: no signal to wait on
	}
}
