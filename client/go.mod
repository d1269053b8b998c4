// The Go producer client is a module of its own, so a program that imports
// it gets nothing of hookd's module graph (River, pgx, OpenTelemetry…): it
// needs the standard library alone. go 1.24 is the oldest Go it builds
// with (omitzero, crypto/rand.Read without an error to handle); it is
// built and tested with hookd's toolchain.
module github.com/hookd/hookd/client

go 1.24
