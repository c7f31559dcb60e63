package coretest

import (
	"strconv"
	"strings"
)

// Script is a golden test script in the format of github.com/cockroachdb/datadriven
// (the one etcd-io/raft's interaction tests and pebble use), parsed by a small reader of
// our own so that the core needs no test-only module outside _test.go files:
//
//	# A comment. Blank lines and comments between commands are kept as they are.
//	command arg key=value key=v1,v2
//	----
//	expected output,
//	ended by a blank line or the end of the file
//
//	command whose output has blank lines
//	----
//	----
//	first paragraph
//
//	second paragraph
//	----
//	----
//
// A command is one line: its name, then space-separated arguments, each key=value or a
// bare key. Lines between the command and "----" are its input. A command with no
// "----" yet (just written, followed by a blank line or the end) fails the comparison and
// gets one when rewritten. Scripts with CRLF line ends are read as LF ones.
//
// Run executes the commands in order and records what each printed; Diff reports the
// commands whose output differs from the expected one, and Rewrite returns the script
// with every expected output replaced by the actual one (a test's -rewrite flag).
// Reading and writing the file is the caller's business: the core does no I/O.
type Script struct {
	Name  string
	Cmds  []Cmd
	parts []part // the text in order: verbatim runs and command outputs
	tail  string // verbatim text after the last command
}

// part is verbatim text followed by command cmd's output block.
type part struct {
	verbatim string
	cmd      int
}

// Cmd is one command of a script.
type Cmd struct {
	Name string
	Args []Arg
	// Input is the text between the command line and "----" (usually empty).
	Input string
	// Line is the command's line number in the script, from 1.
	Line int
	// Expected is the output recorded in the script ("" when none),
	// Actual what Run got; both end with a newline unless empty.
	Expected, Actual string
	hasOutput, ran   bool
}

// Arg is one argument of a command: key=value, or a bare key with an empty Value.
type Arg struct {
	Key, Value string
	HasValue   bool
}

// Pos returns "name:line" for messages.
func (c *Cmd) Pos(script string) string { return script + ":" + strconv.Itoa(c.Line) }

// String returns the command line as written (normalized spacing).
func (c *Cmd) String() string {
	var b strings.Builder
	b.WriteString(c.Name)
	for _, a := range c.Args {
		b.WriteByte(' ')
		b.WriteString(a.Key)
		if a.HasValue {
			b.WriteByte('=')
			b.WriteString(a.Value)
		}
	}
	return b.String()
}

const separator = "----"

// ParseScript parses a script. Errors name the script and line.
func ParseScript(name, text string) (*Script, error) {
	s := &Script{Name: name}
	// NB: CRLF scripts are read as LF ones and rewritten with LF.
	lines := strings.SplitAfter(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	trim := func(l string) string { return strings.TrimSuffix(l, "\n") }
	var verbatim strings.Builder
	for i := 0; i < len(lines); {
		l := trim(lines[i])
		if t := strings.TrimSpace(l); t == "" || t[0] == '#' {
			verbatim.WriteString(lines[i])
			i++
			continue
		}
		if l == separator {
			return nil, scriptError(name, i+1, "cannot find the command of this \"----\"")
		}
		cmd := Cmd{Line: i + 1}
		if msg := parseCommandLine(l, &cmd); msg != "" {
			return nil, scriptError(name, i+1, msg)
		}
		verbatim.WriteString(lines[i])
		i++
		// Input: up to "----", a blank line or the end.
		var input strings.Builder
		for i < len(lines) && trim(lines[i]) != separator && strings.TrimSpace(lines[i]) != "" {
			input.WriteString(trim(lines[i]) + "\n")
			verbatim.WriteString(lines[i])
			i++
		}
		cmd.Input = input.String()
		if i < len(lines) && trim(lines[i]) == separator {
			cmd.hasOutput = true
			i++
			var out strings.Builder
			if i < len(lines) && trim(lines[i]) == separator {
				// Double-separator form: up to "----\n----".
				i++
				closed := false
				for i < len(lines) {
					if trim(lines[i]) == separator && i+1 < len(lines) && trim(lines[i+1]) == separator {
						i += 2
						closed = true
						break
					}
					out.WriteString(trim(lines[i]) + "\n")
					i++
				}
				if !closed {
					return nil, scriptError(name, cmd.Line, "cannot find the closing \"----\" \"----\" of the output")
				}
			} else {
				for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
					out.WriteString(trim(lines[i]) + "\n")
					i++
				}
			}
			cmd.Expected = out.String()
		}
		s.parts = append(s.parts, part{verbatim: verbatim.String(), cmd: len(s.Cmds)})
		verbatim.Reset()
		s.Cmds = append(s.Cmds, cmd)
	}
	s.tail = verbatim.String()
	return s, nil
}

func scriptError(name string, line int, msg string) error {
	return &ScriptError{Pos: name + ":" + strconv.Itoa(line), Msg: msg}
}

// ScriptError is a malformed script or a command that cannot run.
type ScriptError struct {
	Pos string // name:line
	Msg string
}

func (e *ScriptError) Error() string { return e.Pos + ": " + e.Msg }

// parseCommandLine splits "name a=1 b" into cmd's name and arguments; it
// returns what is wrong, or "".
func parseCommandLine(l string, cmd *Cmd) string {
	fields := strings.Fields(l)
	cmd.Name = fields[0]
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if k == "" {
			return "cannot parse argument " + strconv.Quote(f) + ": want key=value or key"
		}
		cmd.Args = append(cmd.Args, Arg{Key: k, Value: v, HasValue: ok})
	}
	return ""
}

// Run executes the commands in order with exec and records their outputs. An
// output that does not end with a newline gets one; an empty output is
// recorded as "ok\n" (raft's convention, which keeps every output block
// non-empty). Run stops at the first command whose exec fails and returns
// that error as a *ScriptError naming the command's line.
func (s *Script) Run(exec func(c *Cmd) (string, error)) error {
	for i := range s.Cmds {
		c := &s.Cmds[i]
		out, err := exec(c)
		if err != nil {
			return &ScriptError{Pos: c.Pos(s.Name), Msg: c.String() + ": " + err.Error()}
		}
		if out == "" {
			out = "ok\n"
		} else if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		c.Actual, c.ran = out, true
	}
	return nil
}

// Diff describes every command that ran and whose actual output differs from the
// expected one (or that has none yet), with a line diff ("-" expected, "+"
// actual); it returns "" when all match.
func (s *Script) Diff() string {
	var b strings.Builder
	for i := range s.Cmds {
		c := &s.Cmds[i]
		if !c.ran || (c.hasOutput && c.Actual == c.Expected) {
			continue
		}
		b.WriteString(c.Pos(s.Name) + ": " + c.String() + "\n")
		if !c.hasOutput {
			b.WriteString("  no expected output (run with -rewrite); got:\n")
		}
		b.WriteString(LineDiff(c.Expected, c.Actual))
	}
	return b.String()
}

// Rewrite returns the script's text with every expected output replaced by the
// actual output of the commands that ran.
func (s *Script) Rewrite() string {
	var b strings.Builder
	for pi, p := range s.parts {
		b.WriteString(p.verbatim)
		c := &s.Cmds[p.cmd]
		out, has := c.Expected, c.hasOutput
		if c.ran {
			out, has = c.Actual, true
		}
		if !has {
			continue
		}
		if strings.Contains(out, "\n\n") || strings.HasPrefix(out, "\n") {
			b.WriteString(separator + "\n" + separator + "\n" + out + separator + "\n" + separator + "\n")
		} else {
			b.WriteString(separator + "\n" + out)
		}
		// An output block ends at a blank line: keep one before what follows.
		next := s.tail
		if pi+1 < len(s.parts) {
			next = s.parts[pi+1].verbatim
		}
		if next != "" && !strings.HasPrefix(next, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString(s.tail)
	return b.String()
}

// LineDiff returns a line diff of want and got in the order of a longest
// common subsequence: removed lines prefixed "- ", added lines "+ " and up to
// diffContext unchanged lines around each change indented by two spaces
// (longer unchanged runs collapse to "  ..."). It is meant for the short
// outputs of script commands: time and memory are quadratic in the number of
// lines.
func LineDiff(want, got string) string {
	if want == got {
		return ""
	}
	w, g := splitLines(want), splitLines(got)
	// lcs[i][j] is the length of the LCS of w[i:] and g[j:].
	lcs := make([][]int32, len(w)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(g)+1)
	}
	for i := len(w) - 1; i >= 0; i-- {
		for j := len(g) - 1; j >= 0; j-- {
			if w[i] == g[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var lines []string // each prefixed "  ", "- " or "+ "
	i, j := 0, 0
	for i < len(w) || j < len(g) {
		switch {
		case i < len(w) && j < len(g) && w[i] == g[j]:
			lines = append(lines, "  "+w[i])
			i, j = i+1, j+1
		case j < len(g) && (i == len(w) || lcs[i][j+1] > lcs[i+1][j]):
			lines = append(lines, "+ "+g[j])
			j++
		default:
			lines = append(lines, "- "+w[i])
			i++
		}
	}
	// Keep unchanged lines within diffContext of a change.
	keep := make([]bool, len(lines))
	for k, l := range lines {
		if l[0] != ' ' {
			for d := max(0, k-diffContext); d <= min(len(lines)-1, k+diffContext); d++ {
				keep[d] = true
			}
		}
	}
	var b strings.Builder
	for k, l := range lines {
		if keep[k] {
			b.WriteString(l + "\n")
		} else if k == 0 || keep[k-1] {
			b.WriteString("  ...\n")
		}
	}
	return b.String()
}

// diffContext is the number of unchanged lines LineDiff shows around a change.
const diffContext = 2

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
