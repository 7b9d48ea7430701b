package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSaysHowToStopServe: the README's quick start tells how to stop the
// service, and that signalling the process id of `go run` does not (go run does
// not forward signals), so scripts build the binary and signal that. The
// signals it names are the ones main listens for.
func TestReadmeSaysHowToStopServe(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, quick, ok := strings.Cut(string(readme), "\n## Quick start\n")
	if !ok {
		t.Fatal("README has no Quick start section")
	}
	quick, _, _ = strings.Cut(quick, "\n## ")
	for _, want := range []string{"Ctrl-C", "does not forward signals", "go build -o bin/rundbrief ./cmd/rundbrief", "bin/rundbrief serve", "kill -TERM", "`SIGINT` and `SIGTERM`"} {
		if !strings.Contains(quick, want) {
			t.Errorf("the quick start does not say %q", want)
		}
	}
	main, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(main), "signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)") {
		t.Error("main no longer stops on SIGINT and SIGTERM, as the README says")
	}
}
