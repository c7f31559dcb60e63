package coretest

import (
	"errors"
	"strings"
	"testing"
)

// echo prints a command's arguments one per line ("" for none), or what
// its first argument says when the command is "blank" (an output with a
// blank line) or "fail".
func echo(c *Cmd) (string, error) {
	switch c.Name {
	case "fail":
		return "", errors.New("failed")
	case "blank":
		return "one\n\ntwo", nil
	}
	var b strings.Builder
	for _, a := range c.Args {
		b.WriteString(a.Key + "=" + a.Value + "\n")
	}
	return b.String(), nil
}

func TestScriptRewrite(t *testing.T) {
	f := func(name, in, want string) {
		t.Helper()
		s, err := ParseScript(name, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.Run(echo); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := s.Rewrite(); got != want {
			t.Errorf("%s: rewritten\n%s\nwant\n%s", name, got, want)
		}
		// A rewritten script matches itself.
		s, err = ParseScript(name, want)
		if err != nil {
			t.Fatalf("%s: reparse: %v", name, err)
		}
		if err := s.Run(echo); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := s.Diff(); d != "" {
			t.Errorf("%s: the rewritten script differs from its own output:\n%s", name, d)
		}
		if got := s.Rewrite(); got != want {
			t.Errorf("%s: rewriting twice changed the script:\n%s", name, got)
		}
	}
	f("empty", "", "")
	f("comments only", "# a\n\n# b\n", "# a\n\n# b\n")
	f("new command", "cmd a=1 b\n", "cmd a=1 b\n----\na=1\nb=\n")
	f("new commands", "x\n\ny k=v\n", "x\n----\nok\n\ny k=v\n----\nk=v\n")
	f("input", "x\nin put\n----\nold\n", "x\nin put\n----\nok\n")
	f("stale output", "# c\ncmd a=2\n----\na=1\n\n# d\ncmd\n----\nok\n",
		"# c\ncmd a=2\n----\na=2\n\n# d\ncmd\n----\nok\n")
	f("blank line in output", "blank\n----\nold\n\nnext\n",
		"blank\n----\n----\none\n\ntwo\n----\n----\n\nnext\n----\nok\n")
	f("double separator kept", "blank\n----\n----\none\n\ntwo\n----\n----\n",
		"blank\n----\n----\none\n\ntwo\n----\n----\n")
	f("double separator dropped", "x\n----\n----\none\n\ntwo\n----\n----\n", "x\n----\nok\n")
	f("output at the end without newline", "x\n----\nstale", "x\n----\nok\n")
	f("crlf", "x\r\n----\r\nstale\r\n\r\ny\r\n", "x\n----\nok\n\ny\n----\nok\n")
}

func TestScriptParse(t *testing.T) {
	s, err := ParseScript("s", "# c\n\ncmd a=1 b c=x=y\ninput 1\ninput 2\n----\nout\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cmds) != 1 {
		t.Fatalf("%d commands, want 1", len(s.Cmds))
	}
	c := s.Cmds[0]
	want := []Arg{{"a", "1", true}, {"b", "", false}, {"c", "x=y", true}}
	if c.Name != "cmd" || c.Line != 3 || c.Input != "input 1\ninput 2\n" || c.Expected != "out\n" || len(c.Args) != len(want) {
		t.Fatalf("parsed %+v", c)
	}
	for i := range want {
		if c.Args[i] != want[i] {
			t.Errorf("argument %d: %+v, want %+v", i, c.Args[i], want[i])
		}
	}
	if got := c.String(); got != "cmd a=1 b c=x=y" {
		t.Errorf("String() = %q", got)
	}

	bad := func(name, in, wantErr string) {
		t.Helper()
		_, err := ParseScript(name, in)
		var se *ScriptError
		if !errors.As(err, &se) || err.Error() != wantErr {
			t.Errorf("%s: error %v, want %q", name, err, wantErr)
		}
	}
	bad("orphan", "# c\n----\nx\n", `orphan:2: cannot find the command of this "----"`)
	bad("argument", "\ncmd =1\n", `argument:2: cannot parse argument "=1": want key=value or key`)
	bad("unclosed", "x\n----\n----\nout\n", `unclosed:1: cannot find the closing "----" "----" of the output`)
}

func TestScriptRunAndDiff(t *testing.T) {
	s, err := ParseScript("s", "a k=1\n----\nk=1\n\nb k=2\n----\nk=3\n\nc\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(echo); err != nil {
		t.Fatal(err)
	}
	want := "s:5: b k=2\n- k=3\n+ k=2\ns:9: c\n  no expected output (run with -rewrite); got:\n+ ok\n"
	if d := s.Diff(); d != want {
		t.Errorf("diff\n%s\nwant\n%s", d, want)
	}

	s, _ = ParseScript("s", "a\n----\nok\n\nfail x=1\n----\nok\n\nb\n")
	err = s.Run(echo)
	if err == nil || err.Error() != "s:5: fail x=1: failed" {
		t.Errorf("error %v", err)
	}
	if s.Cmds[2].ran {
		t.Error("a command after the failing one ran")
	}
}

func TestLineDiff(t *testing.T) {
	f := func(want, got, diff string) {
		t.Helper()
		if d := LineDiff(want, got); d != diff {
			t.Errorf("LineDiff(%q, %q) =\n%s\nwant\n%s", want, got, d, diff)
		}
	}
	f("", "", "")
	f("a\n", "a\n", "")
	f("a\n", "b\n", "- a\n+ b\n")
	f("a\nb\nc\n", "a\nc\n", "  a\n- b\n  c\n")
	f("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\n5\n6\n7\nx\n", "  ...\n  6\n  7\n- 8\n+ x\n")
	f("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "x\n2\n3\n4\n5\n6\n7\n8\ny\n", "- 1\n+ x\n  2\n  3\n  ...\n  7\n  8\n- 9\n+ y\n")
}
