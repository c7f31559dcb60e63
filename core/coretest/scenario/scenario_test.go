package scenario

import (
	"strings"
	"testing"
)

// docExample is the example of the package doc.
const docExample = `node count=1 slots=10 cpu=10 memory=100G
----
ok

op id=a jobs=1000
----
a: running

update
----
<Root>: fair_share=1 usage=0 demand=100
  a: fair_share=1 usage=0 demand=100 status=below_fair_share starvation=non_starving priority=none

heartbeat
----
0 n000 start 0:1..0:10 op=a task=0
`

func TestDocExample(t *testing.T) {
	s, err := Run("example", docExample)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Diff(); d != "" {
		t.Errorf("the package doc's example is stale:\n%s", d)
	}
}

// TestScriptErrors: broken commands stop the script with the command's line
// and what is wrong.
func TestScriptErrors(t *testing.T) {
	f := func(script, wantErr string) {
		t.Helper()
		_, err := Run("s", script)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want one containing %q", script, err, wantErr)
		}
	}
	f("nope\n", `s:1: nope: unknown command "nope"`)
	f("node count=1\n\nop id=a jobs=1 colour=red\n", `s:3: op id=a jobs=1 colour=red: cannot use argument "colour" here`)
	f("op id=a\n", "cannot start an operation without jobs=")
	f("op id=a jobs=x\n", "cannot use jobs=x: want an integer")
	f("op id=a jobs=1 memory=1.5\n", "cannot use memory=1.5: want a non-negative whole amount")
	f("node name=x cpu=-1\n", "cannot use cpu=-1: want a non-negative number of cores")
	f("node name=x count=2\n", "exactly one of name= and count=")
	f("node name=n001\n\nnode count=2\n", "cannot add node n001 twice")
	f("update t=5\n\nupdate t=4\n", "cannot move the time back from 5 to 4")
	f("run until=1\n", "cannot run without until= and dt=")
	f("config colour=red\n", `unknown config key "colour"`)
	f("config scheduling_preemption_priority_scope=all\n", `want "operation_and_ancestors" or "operation_only"`)
	f("pool name=p strong_guarantee=cpu4\n", "want a list of resource:amount")
	f("run until=1 dt=1 quiet=yes\n", "cannot give quiet a value: it is a flag")
	f("heartbeat node=x\n", `cannot find node "x"`)
	f("check\n", "cannot run check without a property")
	f("info\n", "cannot run info without op=, pool= or node=")
	f("update\ninput\n", "cannot use input lines")
	f("usage node=x op=a cpu=1\n", `cannot find node "x"`)
	f("usage op=a cpu=1\n", "cannot run usage without node=")
	f("node count=1\n\nusage node=n000 alloc=0:9 cpu=1\n", "cannot find allocation 0:9 on node n000")
	f("node count=1\n\nusage node=n000 alloc=0:1..0:9 op=a cpu=1\n", "cannot find allocation 0:1 on node n000")
	f("node count=1\n\nusage node=n000 cpu=1\n", "exactly one of alloc= and op=")
	f("node count=1\n\nop id=a jobs=1\n\nupdate\n\nheartbeat\n\nusage node=n000 op=a\n", "exactly one of resources (slots=, cpu=, …) and clear")
	f("node count=1\n\nusage node=n000 op=a cpu=1\n", "cannot find a running allocation to report the usage of on node n000")
	f("node count=1\n\nforget node=n000 alloc=1\n", `cannot use allocation "1": want node-index:sequence`)
	f("node count=1\n\nforget node=n000 alloc=0:3..0:2\n", "cannot use allocation range 0:3..0:2")
	running := "node count=1\n\nop id=a jobs=1\n\nupdate\n\nheartbeat\n\n"
	f(running+"finish node=n000 alloc=0:1\n", "cannot run finish without state=")
	f(running+"finish node=n000 alloc=0:1 op=a state=failed\n", "exactly one of alloc= and op=")
	f(running+"finish node=n000 op=a state=running\n", "cannot use state=running: want one of completed, failed, aborted, refused")
	f(running+"finish node=n000 op=b state=failed\n", "cannot find a running allocation of b on node n000")
	f(running+"finish node=n000 op=a state=failed\n\nfinish node=n000 alloc=0:1 state=completed\n", "cannot finish allocation 0:1 on node n000: it is not running")
	f(running+"report node=n000 alloc=0:1\n", "cannot run report without state=")
	f(running+"report node=n000 state=running\n", "cannot run report without alloc=")
	f("op id=a jobs=1,2 memory=1G,2G,3G\n", "cannot use memory=1G,2G,3G for 2 tasks: want one value, or one per task")
	f("op id=a jobs=1,x\n", "cannot use jobs=x: want an integer")
	f("patch jobs=1\n", "cannot run patch without op=")
	f("op id=a jobs=1\n\npatch op=a jobs=2 cpu=2\n", "cannot use cpu=2 for 0 tasks")
}

// TestCheckGates: the gate check fails the script on a node that preempted
// for a starving operation twice within the backoff.
func TestCheckGates(t *testing.T) {
	script := `config fair_share_starvation_timeout=0.5

node count=1

op id=a jobs=1000

update

heartbeat

op id=b jobs=1000

run until=20 dt=1

check gates backoff=5

check gates backoff=6
`
	_, err := Run("s", script)
	if err == nil || !strings.Contains(err.Error(), "s:17: check gates backoff=6: check gates failed") ||
		!strings.Contains(err.Error(), "n000 preempted at 6 and 12: not more than the backoff 6 apart") {
		t.Errorf("error %v", err)
	}
}

// TestRejectionsArePrinted: the scheduler's rejections are output, not
// script errors, with their code and path.
func TestRejectionsArePrinted(t *testing.T) {
	s, err := Run("s", "op id=a pool=nope jobs=1\n\ncomplete op=nope\n\ninfo op=nope pool=nope node=nope\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"error: schedule: cannot find pool \"nope\" (unknown_pool at pool)\n",
		"error: schedule: cannot find operation \"nope\" (unknown_operation at id)\n",
		"error: schedule: cannot find operation \"nope\" (unknown_operation at id)\nerror: schedule: cannot find pool \"nope\" (unknown_pool at name)\nnope: not registered\n",
	}
	for i, c := range s.Cmds {
		if c.Actual != want[i] {
			t.Errorf("%s: output %q, want %q", c.String(), c.Actual, want[i])
		}
	}
}

func TestFormatAmounts(t *testing.T) {
	f := func(args, want string) {
		t.Helper()
		s, err := Run("s", "node name=x "+args+"\n\ninfo node=x\n")
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := strings.Cut(s.Cmds[1].Actual, " usage="); got != "x: limits="+want {
			t.Errorf("%s: %q, want limits=%s", args, got, want)
		}
	}
	f("slots=2 cpu=1.5 memory=3G", "{slots:2 cpu:1.5 memory:3G}")
	f("memory=1536M network=1000", "{slots:10 cpu:10 memory:1536M network:1000}")
	f("memory=1025 gpu=8", "{slots:10 cpu:10 gpu:8 memory:1025}")
	f("memory=2T slots=0 cpu=0", "{memory:2T}")
}

// TestFinishReportPatch: finish ends allocations as the node reports them,
// report adds reports to the next heartbeat, and patch changes job counts
// and adds tasks of their own resources and durations.
func TestFinishReportPatch(t *testing.T) {
	s, err := Run("s", `node name=n slots=4

op id=a jobs=2,1 cpu=1,2 duration=0,3

update

heartbeat

finish node=n alloc=0:1 state=failed

report node=n alloc=0:9 state=running

heartbeat t=1

patch op=a jobs=-,-,1 cpu=0.5 duration=1

heartbeat t=2

heartbeat t=3
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ok\n",
		"a: running\n",
		"",
		"0 n start 0:1..0:2 op=a task=0\n0 n start 0:3 op=a task=1\n",
		"ok\n",
		"ok\n",
		"1 n failed 0:1 op=a\n1 n abort 0:9 op= reason=\"unknown allocation\"\n1 n start 0:4 op=a task=0\n",
		"a: running\n",
		"2 n start 0:5 op=a task=2\n",
		"3 n completed 0:3 op=a\n3 n completed 0:5 op=a\n",
	}
	for i, c := range s.Cmds {
		if i != 2 && c.Actual != want[i] {
			t.Errorf("%s: output %q, want %q", c.String(), c.Actual, want[i])
		}
	}
}
