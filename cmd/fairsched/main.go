// Command fairsched is the fair-share scheduler's command line:
//
//	fairsched solve [FILE]   run a snapshot's fair-share updates (api.md §6)
//	fairsched help           print the usage
//
// serve and simulate are not available yet. Each subcommand lives in its own
// file as a run function taking its arguments and streams, so that tests call
// it in process.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: fairsched <command> [arguments]

commands:
  solve [FILE]  run the fair-share updates of a snapshot (FILE, or stdin
                without one) and print every element's fair share as JSON
  help          print this message
  serve         (not yet available) serve the HTTP API
  simulate      (not yet available) run a simulated cluster

Exit status: 0 on success, 1 for I/O errors, 2 for bad input or usage.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line args (without the program name) and returns
// the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch cmd := args[0]; cmd {
	case "solve":
		return runSolve(args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[1] == "solve" {
			fmt.Fprint(stdout, solveUsage)
			return 0
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "serve", "simulate":
		fmt.Fprintf(stderr, "fairsched %s: not yet available\n", cmd)
		return 2
	default:
		fmt.Fprintf(stderr, "fairsched: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}
