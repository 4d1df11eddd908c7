// Command gen writes the generated OpenAPI client of package openapiclient: `go generate
// ./internal/openapiclient` (the package's test fails when the checked-in file is stale).
package main

import (
	"fmt"
	"os"

	"github.com/strata-store/strata/internal/openapiclient/codegen"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen <output.go>")
		os.Exit(2)
	}
	src, err := codegen.Source()
	if err == nil {
		err = os.WriteFile(os.Args[1], []byte(src), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
