package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/internal/buildinfo"
)

const versionUsage = `usage: fairsched version [--server URL] [-o table|json]

Prints this binary's version, commit and Go version; with --server, the
server's as well (GET /api/v1/version).
`

// runVersion is the version subcommand (also --version).
func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), versionUsage) }
	server := fs.String("server", "", "also ask this server for its version")
	output := fs.String("output", "table", "table or json")
	fs.StringVar(output, "o", "table", "table or json (short for --output)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || (*output != "table" && *output != "json") {
		fs.Usage()
		return 2
	}
	out := struct {
		Client buildinfo.Info  `json:"client"`
		Server *client.Version `json:"server,omitempty"`
	}{Client: buildinfo.Get()}
	if *server != "" {
		c, err := client.New(*server, client.WithHTTPClient(httpClient(10*time.Second)))
		if err != nil {
			fmt.Fprintf(stderr, "fairsched version: --server: %v\n", err)
			return 2
		}
		if out.Server, err = c.Version(ctx); err != nil {
			fmt.Fprintf(stderr, "fairsched version: %v\n", err)
			return 1
		}
	}
	e := &cliEnv{stdout: stdout, output: *output}
	if *output == "json" {
		e.emit(out, nil)
		return 0
	}
	fmt.Fprintf(stdout, "fairsched %s (commit %s, %s)\n", out.Client.Version, out.Client.Commit, out.Client.GoVersion)
	if out.Server != nil {
		fmt.Fprintf(stdout, "server %s: fairsched %s (commit %s, %s)\n", *server, out.Server.Version, out.Server.Commit, out.Server.GoVersion)
	}
	return 0
}
