// Command generate writes the Go client of /v1 (client.gen.go) with the
// oapi-codegen version pinned in go.mod's tool block. It is what
// `go generate ./handlers/api/apiclient/` runs, in that directory.
//
// oapi-codegen reads the document from a file, but the document is assembled
// from handlers/api/openapi at start and deliberately not committed (see that
// directory's README), so this writes it to a temporary file first.
//
// Usage: go run ./internal/generate [-o file]
//
// -o (default client.gen.go) lets a test write a fresh generation elsewhere
// and compare it with the committed file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/rundbrief/rundbrief/handlers/api/openapi"
)

func main() {
	out := flag.String("o", "client.gen.go", "file to write the client to")
	flag.Parse()
	if err := run(context.Background(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string) error {
	doc, err := openapi.Document()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rundbrief-apiclient-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	// The name is fixed so that nothing in the output depends on the temporary path.
	docPath := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(docPath, doc, 0o644); err != nil {
		return fmt.Errorf("write the document: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "-o", out, docPath)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go tool oapi-codegen: %w", err)
	}
	return nil
}
