// Command fairsched is the fair-share scheduler's command line:
//
//	fairsched serve [--listen ADDR] [--config FILE] [--pprof=BOOL]
//	                         serve the HTTP/JSON API (docs/api.md) until SIGINT/SIGTERM
//	fairsched solve [FILE]   run a snapshot's fair-share updates
//	fairsched simulate SCENARIO --out DIR
//	fairsched simulate --trace FILE --trace-format F --out DIR [--compare B.json]
//	                         replay a scenario on the core with a virtual clock
//	fairsched pools|operations|nodes|config VERB …
//	                         read and change a running server (package client)
//	fairsched top            a refreshing view of a running server's pool tree
//	fairsched version        this binary's version (and a server's)
//	fairsched completion SHELL
//	                         a shell completion script
//	fairsched help           print the usage
//
// Each subcommand lives in its own file as a run function taking its
// arguments and streams, so that tests call it in process.
package main

import (
	"context"
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
  simulate --trace FILE --trace-format swf|alibaba-gpu-2023 --out DIR
           [--trace-nodes FILE] [--pools-by user|group|queue|qos] [--no-gang]
           [--config A.json] [--compare B.json]
                replay a workload trace; with --compare, replay it under
                two configurations and print them side by side

  pools list|get|put|patch|delete        a running server's pools (put, patch
                                         and delete take --dry-run: preview)
  operations list|get|start|patch|complete|abort
                                         its operations
  nodes list|get                         the registered nodes; one with its allocations
  config get|patch|validate              the tree config; validate checks a
                                         --config file without a server
  top                                    a refreshing view of the pool tree
  explain OPERATION | --pool NAME        why an operation or a pool is in
                                         its state, the binding condition first
  status                                 the server's health, role, store and
                                         recovery, and whether it is ready
                (these take --server URL, default $FAIRSCHED_SERVER or
                http://127.0.0.1:8080, and -o table|json; "fairsched pools"
                lists a group's commands)

  version [--server URL]
                this binary's version, commit and Go version (and the server's)
  completion bash|zsh|fish
                a shell completion script
  help [COMMAND]
                print this message, or a command's

Exit status: 0 on success, 1 for I/O errors and server failures, 2 for bad
input or usage (and for a request the server refused with a 4xx).
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
	case "version", "--version", "-version":
		return runVersion(context.Background(), args[1:], stdout, stderr)
	case "completion":
		return runCompletion(args[1:], stdout, stderr)
	case "__names":
		return runNames(args[1:], stdout)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && isClientGroup(args[1]) {
			fmt.Fprint(stdout, groupUsage(args[1]))
			return 0
		}
		if len(args) > 1 && args[1] == "version" {
			fmt.Fprint(stdout, versionUsage)
			return 0
		}
		if len(args) > 1 && args[1] == "completion" {
			fmt.Fprint(stdout, completionUsage)
			return 0
		}
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
		if isClientGroup(cmd) {
			return runClient(args, stdin, stdout, stderr)
		}
		fmt.Fprintf(stderr, "fairsched: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}
