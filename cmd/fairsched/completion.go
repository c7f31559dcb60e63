package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fairsched/fairsched/client"
)

const completionUsage = `usage: fairsched completion bash|zsh|fish

Prints a shell completion script: commands, verbs, flags, and the names of
the pools and operations of the server in $FAIRSCHED_SERVER. Load it with
  source <(fairsched completion bash)          # bash, e.g. in ~/.bashrc
  source <(fairsched completion zsh)           # zsh, e.g. in ~/.zshrc
  fairsched completion fish | source           # fish
`

// topCommands are the first words the completions offer.
func topCommands() []string {
	words := []string{"serve", "solve", "simulate", "version", "completion", "help"}
	for _, c := range cliCommands {
		if !slices.Contains(words, c.group) {
			words = append(words, c.group)
		}
	}
	return words
}

// verbs are a group's verbs.
func verbs(group string) []string {
	var vs []string
	for _, c := range cliCommands {
		if c.group == group && c.verb != "" {
			vs = append(vs, c.verb)
		}
	}
	return vs
}

var clientFlagWords = "--server --token --output -o --timeout -f --pool --state --limit --interval --once --iterations --dry-run"

// completionGroups are the groups whose verbs take a name the server knows.
var completionGroups = map[string]string{"pools": "pools", "operations": "operations"}

func runCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprint(stderr, completionUsage)
		return 2
	}
	groups := []string{}
	for _, w := range topCommands() {
		if len(verbs(w)) > 0 {
			groups = append(groups, w)
		}
	}
	switch args[0] {
	case "bash", "zsh":
		var b strings.Builder
		if args[0] == "zsh" {
			b.WriteString("autoload -U +X bashcompinit && bashcompinit\n")
		}
		b.WriteString("_fairsched() {\n")
		b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]}\n")
		b.WriteString("  if [ \"$COMP_CWORD\" -eq 1 ]; then\n")
		fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W %q -- \"$cur\")); return\n  fi\n", strings.Join(topCommands(), " "))
		b.WriteString("  case ${COMP_WORDS[1]} in\n")
		for _, g := range groups {
			fmt.Fprintf(&b, "  %s)\n    if [ \"$COMP_CWORD\" -eq 2 ]; then\n", g)
			fmt.Fprintf(&b, "      COMPREPLY=($(compgen -W %q -- \"$cur\"))\n", strings.Join(verbs(g), " "))
			b.WriteString("    elif [[ $cur == -* ]]; then\n")
			fmt.Fprintf(&b, "      COMPREPLY=($(compgen -W %q -- \"$cur\"))\n", clientFlagWords)
			if _, ok := completionGroups[g]; ok {
				b.WriteString("    elif [ \"$COMP_CWORD\" -eq 3 ]; then\n")
				fmt.Fprintf(&b, "      COMPREPLY=($(compgen -W \"$(fairsched __names %s 2>/dev/null)\" -- \"$cur\"))\n", g)
			}
			b.WriteString("    else\n      COMPREPLY=($(compgen -f -- \"$cur\"))\n    fi;;\n")
		}
		b.WriteString("  completion)\n    COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\"));;\n")
		fmt.Fprintf(&b, "  top|version)\n    COMPREPLY=($(compgen -W %q -- \"$cur\"));;\n", clientFlagWords)
		b.WriteString("  *)\n    COMPREPLY=($(compgen -f -- \"$cur\"));;\n  esac\n}\n")
		b.WriteString("complete -F _fairsched fairsched\n")
		io.WriteString(stdout, b.String())
	case "fish":
		var b strings.Builder
		b.WriteString("complete -c fairsched -f\n")
		fmt.Fprintf(&b, "complete -c fairsched -n __fish_use_subcommand -a %q\n", strings.Join(topCommands(), " "))
		for _, g := range groups {
			fmt.Fprintf(&b, "complete -c fairsched -n '__fish_seen_subcommand_from %s; and test (count (commandline -opc)) -eq 2' -a %q\n",
				g, strings.Join(verbs(g), " "))
			if _, ok := completionGroups[g]; ok {
				fmt.Fprintf(&b, "complete -c fairsched -n '__fish_seen_subcommand_from %s; and test (count (commandline -opc)) -eq 3' -a '(fairsched __names %s 2>/dev/null)'\n", g, g)
			}
		}
		b.WriteString("complete -c fairsched -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
		for _, f := range strings.Fields(clientFlagWords) {
			if strings.HasPrefix(f, "--") {
				fmt.Fprintf(&b, "complete -c fairsched -l %s\n", strings.TrimPrefix(f, "--"))
			}
		}
		b.WriteString("complete -c fairsched -s f -r -F\n")
		io.WriteString(stdout, b.String())
	default:
		fmt.Fprintf(stderr, "fairsched completion: unknown shell %q\n\n%s", args[0], completionUsage)
		return 2
	}
	return 0
}

// runNames prints the names of the group's objects on the server of
// $FAIRSCHED_SERVER, one per line, for the completions; it prints nothing
// when the server does not answer within a second.
func runNames(args []string, stdout io.Writer) int {
	if len(args) != 1 {
		return 2
	}
	c, err := client.New(envOr("FAIRSCHED_SERVER", defaultServer), client.WithRetries(0),
		client.WithHTTPClient(httpClient(time.Second)))
	if err != nil {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	switch args[0] {
	case "pools":
		pools, err := c.Pools(ctx)
		if err != nil {
			return 1
		}
		for _, p := range pools {
			fmt.Fprintln(stdout, p.Name)
		}
	case "operations":
		for op, err := range c.Operations(ctx, client.OperationFilter{}) {
			if err != nil {
				return 1
			}
			fmt.Fprintln(stdout, op.ID)
		}
	default:
		return 2
	}
	return 0
}
