package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/wire"
)

const solveUsage = `usage: fairsched solve [FILE]

Reads a snapshot (docs/api.md, "Solve") from FILE, or from stdin without FILE or with
"-", runs its fair-share updates and prints the result as one line of JSON:
{"updates": [{"label": ..., "elements": {"<Root>": {...}, ...}}]}.
The output is deterministic: the same snapshot gives the same bytes.

A snapshot that is not valid is reported as
  fairsched solve: <json path>: <message>
with exit status 2; a file that cannot be read or a result that cannot be
written exits with status 1.
`

// runSolve is the solve subcommand.
func runSolve(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("solve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), solveUsage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "fairsched solve: cannot read %d files: want at most one FILE\n", fs.NArg())
		return 2
	}
	var (
		data []byte
		err  error
	)
	if name := fs.Arg(0); name == "" || name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fairsched solve: cannot read the snapshot: %v\n", err)
		return 1
	}
	out, err := solve(nil, data)
	if err != nil {
		// Decoding errors are "<path>: <message>"; Solve's errors name the
		// path too. Either way the snapshot is at fault.
		fmt.Fprintf(stderr, "fairsched solve: %v\n", err)
		return 2
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "fairsched solve: cannot write the result: %v\n", err)
		return 1
	}
	return 0
}

// solve decodes a snapshot, runs it and appends the JSON result and a newline
// to dst.
func solve(dst, data []byte) ([]byte, error) {
	s, err := wire.DecodeSnapshot(data)
	if err != nil {
		return dst, err
	}
	r, err := snapshot.Solve(s)
	if err != nil {
		return dst, err
	}
	dst = wire.AppendSolveResult(dst, r)
	return append(dst, '\n'), nil
}
