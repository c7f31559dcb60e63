// Command fairsched is the fair-share scheduler's command line:
//
//	fairsched serve [--listen ADDR] [--config FILE] [--pprof=BOOL]
//	                         serve the HTTP/JSON API (api.md) until SIGINT/SIGTERM
//	fairsched solve [FILE]   run a snapshot's fair-share updates (api.md §6)
//	fairsched simulate SCENARIO --out DIR
//	                         replay a scenario on the core with a virtual clock
//	fairsched help           print the usage
//
// Each subcommand lives in its own file as a run function taking its
// arguments and streams, so that tests call it in process.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: fairsched <command> [arguments]

commands:
  serve [--listen ADDR] [--config FILE] [--pprof=BOOL]
                serve the HTTP/JSON API on ADDR (default 127.0.0.1:8080)
                with the pool tree of FILE (default: the embedded
                examples/serve.json) until SIGINT or SIGTERM
  solve [FILE]  run the fair-share updates of a snapshot (FILE, or stdin
                without one) and print every element's fair share as JSON
  simulate SCENARIO --out DIR
                replay a scenario (cluster, pool tree, workload) on the
                scheduling core with a virtual clock; write a time series,
                a summary and charts into DIR
  help          print this message

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
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "solve":
		return runSolve(args[1:], stdin, stdout, stderr)
	case "simulate":
		return runSimulate(args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[1] == "serve" {
			fmt.Fprint(stdout, serveUsage)
			return 0
		}
		if len(args) > 1 && args[1] == "solve" {
			fmt.Fprint(stdout, solveUsage)
			return 0
		}
		if len(args) > 1 && args[1] == "simulate" {
			fmt.Fprint(stdout, simulateUsage)
			return 0
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "fairsched: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}
