package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/internal/buildinfo"
)

// The client commands (pools, operations, nodes, config, top) talk to a
// running server through package client. Each is a group and a verb
// ("pools list"); cliCommands is their table, which drives dispatch, the
// usage text and the shell completions.

// cliCommand is one verb of a group.
type cliCommand struct {
	group, verb string
	args        string // the positional arguments, for the usage
	summary     string
	// flags adds the command's own flags to fs; the returned function runs
	// it with the positional arguments.
	flags func(fs *flag.FlagSet) func(e *cliEnv, args []string) error
	// offline commands need no server.
	offline bool
}

// cliEnv is what a running client command has.
type cliEnv struct {
	ctx    context.Context
	c      *client.Client
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	output string // "table" or "json"
}

// usageError is a command line the command cannot run (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const defaultServer = "http://127.0.0.1:8080"

const clientFlagsUsage = `flags of every client command (they may follow the arguments):
  --server URL      the server (default $FAIRSCHED_SERVER, else ` + defaultServer + `)
  --token TOKEN     a bearer token (default $FAIRSCHED_TOKEN)
  -o, --output FMT  table (default) or json
  --timeout D       give up on a request after D (default 30s)
`

// isClientGroup reports whether name is a group of client commands.
func isClientGroup(name string) bool {
	return slices.ContainsFunc(cliCommands, func(c cliCommand) bool { return c.group == name })
}

// runClient runs "GROUP VERB ARGS…".
func runClient(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runClientCtx(ctx, args, stdin, stdout, stderr)
}

func runClientCtx(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	group, verb, rest := args[0], "", args[1:]
	single := slices.ContainsFunc(cliCommands, func(c cliCommand) bool { return c.group == group && c.verb == "" })
	if !single {
		if len(args) < 2 || args[1] == "help" || args[1] == "-h" || args[1] == "--help" {
			fmt.Fprint(stdout, groupUsage(group))
			if len(args) < 2 {
				return 2
			}
			return 0
		}
		verb, rest = args[1], args[2:]
	}
	i := slices.IndexFunc(cliCommands, func(c cliCommand) bool { return c.group == group && c.verb == verb })
	if i < 0 {
		fmt.Fprintf(stderr, "fairsched %s: unknown command %q\n\n%s", group, verb, groupUsage(group))
		return 2
	}
	cmd := cliCommands[i]
	name := strings.TrimSpace(group + " " + verb)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: fairsched %s %s\n  %s\n\n", name, cmd.args, cmd.summary)
		fs.PrintDefaults()
	}
	server := fs.String("server", envOr("FAIRSCHED_SERVER", defaultServer), "the server's URL")
	token := fs.String("token", os.Getenv("FAIRSCHED_TOKEN"), "a bearer token")
	output := fs.String("output", "table", "output format: table or json")
	fs.StringVar(output, "o", "table", "output format: table or json (short for --output)")
	timeout := fs.Duration("timeout", 30*time.Second, "request timeout")
	run := cmd.flags(fs)
	pos, err := parseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *output != "table" && *output != "json" {
		fmt.Fprintf(stderr, "fairsched %s: --output %q: want table or json\n", name, *output)
		return 2
	}
	e := &cliEnv{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, output: *output}
	if !cmd.offline {
		e.c, err = client.New(*server, client.WithToken(*token),
			client.WithHTTPClient(httpClient(*timeout)),
			client.WithUserAgent("fairsched-cli/"+buildinfo.Get().Version))
		if err != nil {
			fmt.Fprintf(stderr, "fairsched %s: --server: %v\n", name, err)
			return 2
		}
	}
	if err := run(e, pos); err != nil {
		fmt.Fprintf(stderr, "fairsched %s: %v\n", name, err)
		var ue usageError
		var ae *client.Error
		var ic invalidConfig
		switch {
		case errors.As(err, &ue):
			fs.Usage()
			return 2
		case errors.As(err, &ic):
			return 2
		case errors.As(err, &ae) && ae.StatusCode < 500:
			return 2
		}
		return 1
	}
	return 0
}

// parseInterspersed parses flags wherever they are among the arguments and
// returns the positional ones ("--" ends the flags).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// groupUsage lists a group's verbs.
func groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: fairsched %s <command> [arguments] [flags]\n\ncommands:\n", group)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range cliCommands {
		if c.group == group {
			fmt.Fprintf(tw, "  %s %s\t%s\n", c.verb, c.args, c.summary)
		}
	}
	tw.Flush()
	b.WriteString("\n" + clientFlagsUsage)
	return b.String()
}

// emit writes v as indented JSON (-o json) or calls table.
func (e *cliEnv) emit(v any, table func(tw *tabwriter.Writer)) error {
	if e.output == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// readBody reads a JSON body from the file named by path ("-": stdin) into
// v, refusing unknown keys.
func (e *cliEnv) readBody(path string, v any) error {
	if path == "" {
		return usagef("want the body in a file: -f FILE (or -f - for stdin)")
	}
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(e.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
